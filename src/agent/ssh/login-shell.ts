/**
 * Root's login shell in an instance's container, as every interactive way in starts it: the agent's own SSH server
 * (ssh-server.ts, shell and exec sessions) and the console's terminal (../terminal.ts). One script, so both see the
 * same shell, home directory and variables in any image: bash where /etc/passwd names it, /bin/sh otherwise.
 */

/** What a session sees before any profile: what OpenSSH's sshd gives a root login. */
export const SESSION_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The script every session runs under (`sh -c PRELUDE sh MODE ROWS COLS COMMAND`): the TTY's size first (so
 * `stty size` is right from the start), then the home directory, /etc/environment's variables (what sshd's pam_env
 * gives; `env >> /etc/environment` in onstart is how a renter puts the container's variables in sessions), then root's
 * login shell from /etc/passwd (bash on most images; /bin/sh when it names none that exists) runs the command, or
 * a login shell.
 */
const PRELUDE = `[ "$2" -gt 0 ] 2>/dev/null && stty rows "$2" cols "$3" 2>/dev/null
cd ~ 2>/dev/null || cd /
if [ -r /etc/environment ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in [A-Za-z_]*=*) export "$line" ;; esac
  done < /etc/environment
fi
login=/bin/sh
if [ -r /etc/passwd ]; then
  while IFS=: read -r name pw uid gid gecos home shell; do
    if [ "$uid" = 0 ]; then [ -n "$shell" ] && [ -x "$shell" ] && login=$shell; break; fi
  done < /etc/passwd
fi
case $login in */nologin|*/false) login=/bin/sh ;; esac
export SHELL="$login"
if [ "$1" = shell ]; then exec "$login" -l; fi
exec "$login" -c "$4"`;

export interface LoginShellRequest {
  /** `shell`: a login shell; `exec`: `command` run by the login shell with `-c`. */
  mode: 'shell' | 'exec';
  /** The session's whole environment (`NAME=value`): nothing of the container's own is passed (`env -i`). */
  vars: readonly string[];
  /** The TTY's size to set first; 0 when there is no TTY or no size yet. */
  rows?: number;
  cols?: number;
  command?: string;
}

/** The argv of a `docker exec` that starts root's login shell as asked (needs only /bin/sh and `env` in the image). */
export function loginShellArgv(r: LoginShellRequest): string[] {
  return ['env', '-i', ...r.vars, '/bin/sh', '-c', PRELUDE, 'sh', r.mode, String(r.rows ?? 0), String(r.cols ?? 0), r.command ?? ''];
}
