/** Who is signed in, and what the server is (emulator or production), for the whole console. */
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { api, GpuplaneError, SIGNED_OUT_EVENT } from './api.js';

export type FullUser = Awaited<ReturnType<typeof api.account.currentUser>>;
/**
 * Signed in, but the account cannot be read: in a team context whose role lacks `user_read`, GET /users/current/ is
 * 403 while the session is valid (contract §3 Team context). Nothing of the account is known then.
 */
export type RestrictedUser = { [K in keyof FullUser]?: undefined } & { restricted: true };
export type User = (FullUser & { restricted?: false }) | RestrictedUser;
/** The session's context (`team_id` null: personal) and the teams it may switch into. */
export type TeamContext = Omit<Awaited<ReturnType<typeof api.auth.sessionTeam>>, 'success'>;

export interface Session {
  /** undefined while loading; null when signed out. */
  user: User | null | undefined;
  /**
   * The emulator control API answers this user (emulator mode, and an admin): the Emulator page is offered. Only an
   * admin's session asks: the control API answers anyone else 403, on every page load (issue 29 item 9).
   */
  emulator: boolean;
  /** The user hosts machines: the Machines page is offered. */
  host: boolean;
  /** The team context of the session (issue 15: switching into a team's context). */
  context: TeamContext;
  /** Switches the session into a team's context (null: personal); every page then acts for that team. */
  switchTeam(teamId: number | null): Promise<void>;
  refresh(): Promise<void>;
  signOut(): Promise<void>;
}

const PERSONAL: TeamContext = { team_id: null, teams: [] };

const SessionContext = createContext<Session | null>(null);

/** Emulator mode is where `/_emu/` exists and answers an admin; asked only for an admin (anyone else gets 403). */
async function probeEmulator(): Promise<boolean> {
  try {
    await api.emulator.clock();
    return true;
  } catch {
    return false;
  }
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [emulator, setEmulator] = useState(false);
  const [host, setHost] = useState(false);
  const [context, setContext] = useState<TeamContext>(PERSONAL);

  // Everything known before anything is shown: the navigation appears once, complete.
  const refresh = useCallback(async () => {
    let me: User;
    try {
      me = await api.account.currentUser();
    } catch (err) {
      // A 403 is a valid session whose team role may not read the user: confirm the session with the one route any
      // session may read (its context); only then is it signed in, restricted. Anything else (401): signed out.
      if (!(err instanceof GpuplaneError && err.status === 403)) return setUser(null);
      try {
        await api.auth.sessionTeam();
      } catch {
        return setUser(null);
      }
      me = { restricted: true };
    }
    const [emu, machines, ctx] = await Promise.all([
      me.is_admin === true ? probeEmulator() : false,
      api.machines.list('me').then((r) => r.machines.length > 0, () => false),
      api.auth.sessionTeam().then(({ team_id, teams }) => ({ team_id, teams }), () => PERSONAL),
    ]);
    setEmulator(emu);
    setContext(ctx);
    setHost(machines);
    setUser(me);
  }, []);

  const signOut = useCallback(async () => {
    try {
      await api.auth.logout();
    } finally {
      setUser(null);
    }
  }, []);

  // Errors go to the caller (shown next to the switcher); on success everything is read again in the new context.
  const switchTeam = useCallback(async (teamId: number | null) => {
    const r = await api.auth.switchTeam(teamId);
    setContext({ team_id: r.team_id, teams: r.teams });
    await refresh();
  }, [refresh]);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // A 401 from any call: the session is over (expired, or ended from another browser); back to the sign-in page.
  useEffect(() => {
    const out = () => setUser((u) => (u ? null : u));
    window.addEventListener(SIGNED_OUT_EVENT, out);
    return () => window.removeEventListener(SIGNED_OUT_EVENT, out);
  }, []);

  return <SessionContext.Provider value={{ user, emulator, host, context, switchTeam, refresh, signOut }}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}
