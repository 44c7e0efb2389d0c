import { Link, useLocation } from '../lib/router.js';

/** The Account section's pages: the account itself, security settings and teams, reachable by keyboard as links. */
export function AccountTabs() {
  const { path } = useLocation();
  const tabs = [
    { to: '/account', text: 'Account' },
    { to: '/account/security', text: 'Security settings' },
    { to: '/account/teams', text: 'Teams' },
  ];
  return (
    <nav className="tabs" aria-label="Account sections">
      <ul>
        {tabs.map((t) => <li key={t.to}><Link to={t.to} aria-current={path === t.to ? 'page' : undefined}>{t.text}</Link></li>)}
      </ul>
    </nav>
  );
}
