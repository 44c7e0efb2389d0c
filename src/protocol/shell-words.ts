/**
 * Words of a shell-style line that no shell will run: a Docker-style env string (a template's `env`, the CLI's
 * `--env "-e TZ=UTC -p 8080:8080"`, read by the CLI and by the console's rent dialog) and an instance's `args_str`
 * (joined by the server from an `args` list, split for the agent into the container's argv). Every side reads and
 * writes them by this one rule, that of /bin/sh for quoting: whitespace separates words; '…' keeps everything
 * literally; "…" keeps everything but lets a backslash escape " \ $ `; a backslash outside quotes escapes the next
 * character; pieces that touch (A="b c") make one word; an unclosed quote runs to the end.
 *
 * Not the `shell-quote` package: it also reads operators (`&&`, `|`, `>`), globs, comments and `$VARIABLES`, which
 * here are literal text (nothing expands them: the argv is exec'd as given), so its words would not be these.
 * Lives in protocol/ because the server, the agent, the CLI and the console all import it.
 */

/** Splits `s` into words. */
export function splitShellWords(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let has = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "'") {
      const end = s.indexOf("'", i + 1);
      cur += end < 0 ? s.slice(i + 1) : s.slice(i + 1, end);
      i = end < 0 ? s.length : end;
      has = true;
    } else if (c === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length && '"\\$`'.includes(s[i + 1])) i++;
        cur += s[i++];
      }
      has = true;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** One word as `splitShellWords` reads it back: bare when it holds only safe characters, else in single quotes. */
export function quoteShellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
