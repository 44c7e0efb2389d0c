/**
 * Where a browser is sent when it opens an instance port's URL without a credential (src/ports/: the port host
 * redirects to `/ports/open?instance=<id>&port=<p>&path=<path>`). Signed out, the console shows its sign-in here first
 * (App.tsx) and this page once signed in. It asks the server for a one-use grant for the port (the session's own
 * right to the instance decides) and goes on to it: the port's host sets its cookie and opens `path` in the app.
 * `location.replace`, so Back does not return here to make another grant.
 */
import { useEffect, useState } from 'react';
import { api, errorText } from '../lib/api.js';
import { portGrantPath } from '../lib/connect.js';
import { Link, useLocation } from '../lib/router.js';

/** A path on the port to land on: one leading `/` (never `//host`), else `/`. The server checks it again. */
function landing(path: string | null): string {
  return path && path.startsWith('/') && !path.startsWith('//') && !path.startsWith('/\\') && path.length <= 2048 ? path : '/';
}

export default function PortOpenPage() {
  const { search } = useLocation();
  const id = Number(search.get('instance'));
  const port = Number(search.get('port'));
  const valid = Number.isSafeInteger(id) && id > 0 && Number.isInteger(port) && port >= 1 && port <= 65535;
  const path = landing(search.get('path'));
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!valid) return;
    let gone = false;
    void (async () => {
      try {
        const r = await api.transport.request<{ success: boolean; url: string }>('POST', portGrantPath(id, port), { body: { path } });
        if (!gone) window.location.replace(r.url);
      } catch (err) {
        if (!gone) setError(errorText(err));
      }
    })();
    return () => {
      gone = true;
    };
  }, [valid, id, port, path]);

  if (!valid) {
    return (
      <section>
        <h1>Open a port</h1>
        <p role="alert">This link does not name an instance and a port (it needs <code>?instance=ID&amp;port=PORT</code>).</p>
        <p><Link to="/instances">Go to Instances</Link></p>
      </section>
    );
  }
  return (
    <section>
      <h1>Opening port {port} of instance {id}</h1>
      {error ? (
        <>
          <p role="alert">Port {port} of instance {id} could not be opened: {error}</p>
          <p><Link to="/instances">Go to Instances</Link></p>
        </>
      ) : (
        <p aria-busy="true">Signing this browser in to the port…</p>
      )}
    </section>
  );
}
