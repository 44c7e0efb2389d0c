/**
 * The CLI's saved settings: the API key that `gpuplane set api-key` stores, in the user's config directory
 * (`$XDG_CONFIG_HOME/gpuplane/` or `~/.config/gpuplane/`), readable by the user only.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function configDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.trim() !== '' ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'gpuplane');
}

export const apiKeyFile = (env: NodeJS.ProcessEnv) => join(configDir(env), 'api_key');

export function readSavedApiKey(env: NodeJS.ProcessEnv): string | undefined {
  const file = apiKeyFile(env);
  if (!existsSync(file)) return undefined;
  const key = readFileSync(file, 'utf8').trim();
  return key === '' ? undefined : key;
}

export function saveApiKey(key: string, env: NodeJS.ProcessEnv): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = apiKeyFile(env);
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  // writeFileSync keeps the mode of a file that already existed: tighten it in every case.
  chmodSync(file, 0o600);
  return file;
}
