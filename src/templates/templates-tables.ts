import type { Generated } from 'kysely';

/**
 * Templates (spec: Template, and the additional search fields). Booleans are integers 0/1, times Unix seconds,
 * JSON objects as text, like every table.
 */
export interface TemplatesTable {
  id: Generated<number>;
  /** Content-derived (see templates-hash.ts); changes on every edit. Unique. */
  hash_id: string;
  /** Creator (`creator_id` in search) and, in a team context, the owning team. */
  user_id: number;
  team_id: number | null;
  name: string;
  image: string;
  tag: string;
  /** Image default tag (search field `default_tag`): the tag the template was saved with. */
  default_tag: string;
  desc: string;
  readme: string;
  readme_visible: number;
  /** Docker-flag form, e.g. `-e NAME=value -p 8080:8080`. */
  env: string;
  onstart: string;
  runtype: string;
  args_str: string;
  ssh_direct: number;
  use_ssh: number;
  jup_direct: number;
  jupyter_dir: string | null;
  use_jupyter_lab: number;
  docker_login_repo: string;
  docker_login_user: string;
  /** `SecretBox.seal` output, or '' when the template has no password. Never stored in plain text. */
  docker_login_pass_sealed: string;
  href: string;
  repo: string;
  /** JSON object: default offer filters. */
  extra_filters: string;
  recommended_disk_space: number;
  private: number;
  /** JSON, or null: a UI hint that attaches nothing. */
  volume_info: string | null;
  recommended: number;
  count_created: number;
  recent_create_date: number | null;
  created_at: number;
  /** Bumped on every edit and hashed into `hash_id`, so even an edit back to old content yields a new hash_id. */
  version: number;
}

export interface TemplatesTables {
  templates: TemplatesTable;
}
