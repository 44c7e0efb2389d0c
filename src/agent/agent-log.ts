/**
 * The agent's log: pino's calling convention (`log.info({fields}, 'message')`), so the CLI passes a pino logger and
 * tests a recording one. Callers put ids and states in the fields, never a key, an env value or a password; the pino
 * logger of the CLI also redacts the field names that could hold one, in case.
 */
export interface AgentLog {
  debug(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/** Field paths pino blanks out wherever they appear (one level deep). */
export const REDACT_PATHS = ['machine_key', 'api_key', 'apiKey', 'password', 'env', 'docker_login', '*.machine_key', '*.password', '*.env', '*.docker_login'];

export const silentLog: AgentLog = { debug() {}, info() {}, warn() {}, error() {} };
