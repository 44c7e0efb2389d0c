/**
 * The console's shell: the main navigation and the page for the URL. The navigation's link names are part of the
 * contract (issue 15: tests find them by role and name): Offers, Instances, Templates, Billing, Keys, Account, plus
 * Machines for hosts and Emulator in emulator mode.
 */
import { lazy, Suspense, useEffect, useRef, useState, type ReactNode } from 'react';
import { errorText } from './lib/api.js';
import { Link, navigate, useLocation } from './lib/router.js';
import { useSession } from './lib/session.js';
import { LoginPage } from './pages/Login.js';
import { SignUpPage } from './pages/SignUp.js';
import { ResetPasswordPage } from './pages/ResetPassword.js';
import { Placeholder } from './pages/Placeholder.js';
import { PAGES, type PageDef } from './pages.js';

/** Pages reachable signed out. */
const PUBLIC = new Set(['/login', '/signup', '/reset-password']);

/**
 * The session's context, shown in the header and switched there (issue 15: switching into a team's context). Shown
 * once the user is a member of a team; in a team's context every page acts for the team, within the member's role.
 */
function ContextSwitch() {
  const { context, switchTeam } = useSession();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (context.teams.length === 0) return null;
  return (
    <span className="context">
      <label htmlFor="context-switch">Context</label>{' '}
      <select id="context-switch" value={context.team_id ?? ''} disabled={busy} aria-describedby={error ? 'context-error' : undefined}
        onChange={async (e) => {
          setBusy(true);
          setError(null);
          try {
            await switchTeam(e.target.value === '' ? null : Number(e.target.value));
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}>
        <option value="">Personal</option>
        {context.teams.map((t) => <option key={t.team_id} value={t.team_id}>Team {t.team_name} ({t.role})</option>)}
      </select>
      {error && <span id="context-error" role="alert" className="error">{error}</span>}
    </span>
  );
}

function Nav({ path }: { path: string }) {
  const { user, emulator, host, signOut } = useSession();
  if (!user) return null;
  const shown = PAGES.filter((p) => p.nav && (!p.when || (p.when === 'host' ? host : emulator)));
  return (
    <header className="top">
      <a className="skip" href="#main">Skip to content</a>
      <span className="brand">gpuplane</span>
      <nav aria-label="Main">
        <ul>
          {shown.map((p) => (
            <li key={p.path}>
              <Link to={p.path} aria-current={path === p.path || path.startsWith(`${p.path}/`) ? 'page' : undefined}>{p.title}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <span className="who">
        <ContextSwitch />
        {!user.restricted && <span className="muted">{user.email}</span>}{' '}
        <button type="button" className="small" onClick={async () => { await signOut(); navigate('/login'); }}>Sign out</button>
      </span>
    </header>
  );
}

function Page({ def }: { def: PageDef }): ReactNode {
  if (!def.load) return <Placeholder title={def.title} what={def.what} />;
  const Lazy = lazyPages.get(def.path)!;
  return <Lazy />;
}

/** Pages load as their own scripts: the first page's JavaScript stays small (issue 15's budget). */
const lazyPages = new Map(PAGES.filter((p) => p.load).map((p) => [p.path, lazy(p.load!)]));

export function App() {
  const { user, context } = useSession();
  const { path, search } = useLocation();

  useEffect(() => {
    if (user === null && !PUBLIC.has(path)) navigate('/login', { replace: true });
    if (user && (PUBLIC.has(path) || path === '/')) navigate('/instances', { replace: true });
  }, [user, path]);

  // After a move to another page, focus goes to the page's content (as a full page load would put a screen reader
  // there), not left on a link that may no longer exist. Not on the first load.
  const firstPath = useRef(path);
  useEffect(() => {
    if (path === firstPath.current) return;
    firstPath.current = '';
    document.getElementById('main')?.focus({ preventScroll: false });
  }, [path]);

  useEffect(() => {
    const def = PAGES.find((p) => path === p.path || path.startsWith(`${p.path}/`));
    document.title = `${def?.title ?? (path === '/signup' ? 'Sign up' : path === '/reset-password' ? 'Reset password' : 'Log in')} · gpuplane`;
  }, [path]);

  if (user === undefined) return <main id="main" aria-busy="true"><p>Loading…</p></main>;

  let body: ReactNode;
  if (!user) {
    const notice = search.get('verified') ? 'E-mail address verified: you can log in now.'
      : search.get('reset') ? 'Password changed: log in with the new one.' : undefined;
    body = path === '/signup' ? <SignUpPage /> : path === '/reset-password' ? <ResetPasswordPage /> : <LoginPage notice={notice} />;
  } else {
    const def = PAGES.find((p) => path === p.path || path.startsWith(`${p.path}/`));
    body = def ? <Page def={def} /> : <section><h1>Not found</h1><p>No page at {path}. <Link to="/instances">Go to Instances</Link></p></section>;
  }
  return (
    <>
      <Nav path={path} />
      {/* A new context shows every page afresh: what it loaded belonged to the old one. */}
      <main id="main" tabIndex={-1} key={context.team_id ?? 'personal'}>
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>{body}</Suspense>
      </main>
    </>
  );
}
