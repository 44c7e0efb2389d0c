/**
 * Every page of the console: its path, its name in the main navigation, when it is offered, and its module (loaded
 * when first shown). To add a page: write `pages/Name.tsx` exporting a default component, and give it `load` here.
 */
import type { ComponentType } from 'react';

export interface PageDef {
  path: string;
  title: string;
  /** One line saying what the page is for (shown by a placeholder). */
  what: string;
  /** In the main navigation. */
  nav: boolean;
  /** Offered only to hosts (`host`) or only in emulator mode (`emulator`). */
  when?: 'host' | 'emulator';
  load?: () => Promise<{ default: ComponentType }>;
}

export const PAGES: PageDef[] = [
  { path: '/offers', title: 'Offers', nav: true, what: 'Search machines to rent and rent them.', load: () => import('./pages/Offers.js') },
  // Before /instances: the first path that matches wins.
  { path: '/instances/terminal', title: 'Terminal', nav: false, what: "A shell in a running instance's container.", load: () => import('./pages/Terminal.js') },
  { path: '/ports/open', title: 'Open a port', nav: false, what: "Signs this browser in to an instance port's URL and opens it.", load: () => import('./pages/PortOpen.js') },
  { path: '/instances', title: 'Instances', nav: true, what: 'Your instances, live.', load: () => import('./pages/Instances.js') },
  { path: '/templates', title: 'Templates', nav: true, what: 'Templates, SSH keys, environment variables, volumes, serverless endpoints and workergroups.', load: () => import('./pages/Templates.js') },
  { path: '/billing', title: 'Billing', nav: true, what: 'Credit, charges, spend per day and invoices.', load: () => import('./pages/Billing.js') },
  { path: '/keys', title: 'Keys', nav: true, what: 'API keys: create (shown once), scope, revoke.', load: () => import('./pages/Keys.js') },
  // Sub-pages of Account before it: the first path that matches wins.
  { path: '/account/security', title: 'Security settings', nav: false, what: 'Two-factor methods, backup codes, the audit log.', load: () => import('./pages/Security.js') },
  { path: '/account/teams', title: 'Teams', nav: false, what: 'Teams: members, invitations, roles.', load: () => import('./pages/Teams.js') },
  { path: '/account', title: 'Account', nav: true, what: 'Your account, sessions, security settings and teams.', load: () => import('./pages/Account.js') },
  { path: '/machines', title: 'Machines', nav: true, when: 'host', what: 'Your machines: state, GPUs, listing, maintenance, earnings.', load: () => import('./pages/Machines.js') },
  { path: '/emulator', title: 'Emulator', nav: true, when: 'emulator', what: 'The emulator: clock, outbox, faults, scripted failures, transitions, reset (admins).', load: () => import('./pages/Emulator.js') },
];
