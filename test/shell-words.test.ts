// The one rule for shell-style words (src/protocol/shell-words.ts): how the server joins an `args` list into
// `args_str` and the agent's argv is split back out of it, and how the CLI and the console read a Docker-style env
// string. Each side's own entry point is checked against the same cases, so they cannot drift apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quoteShellWord, splitShellWords } from '../src/protocol/shell-words.js';
import { argsListToString } from '../src/instances/instances-request.js';
import { parseEnv } from '../src/cli/instance-args.js';
import { parseEnvString } from '../console/src/lib/rent.js';

test('words: whitespace, single and double quotes, backslashes, touching pieces, unclosed quotes', () => {
  const cases: [string, string[]][] = [
    ['  a  b\tc ', ['a', 'b', 'c']],
    [`'a b' "c d"`, ['a b', 'c d']],
    [`A="b c"'d'e`, ['A=b cde']],
    [`'it'\\''s'`, ["it's"]],
    [`"say \\"hi\\" \\$HOME \\n"`, ['say "hi" $HOME \\n']],
    [`a\\ b \\'`, ['a b', "'"]],
    [`'' ""`, ['', '']],
    [`'open to the end`, ['open to the end']],
    // Operators, globs, comments and variables are plain text: nothing here runs a shell.
    ['a && b | c > d # e $F *', ['a', '&&', 'b', '|', 'c', '>', 'd', '#', 'e', '$F', '*']],
  ];
  for (const [line, words] of cases) assert.deepEqual(splitShellWords(line), words, line);
});

test('a word quoted by quoteShellWord splits back to itself; safe words stay bare', () => {
  const words = ['plain', 'a/b.c:d=e,f@g%h+i-j_k', '', 'two words', "it's", 'say "hi"', '$HOME', 'back\\slash', 'tab\there', 'new\nline', 'ünï'];
  for (const w of words) assert.deepEqual(splitShellWords(quoteShellWord(w)), [w], w);
  assert.equal(quoteShellWord('python3'), 'python3');
  assert.equal(quoteShellWord('a b'), `'a b'`);
  assert.equal(quoteShellWord("it's"), `'it'\\''s'`);
  // The server's join of an `args` list is this quoting; the agent's split gives the list back.
  const args = ['sh', '-c', `echo "it's" && sleep 1`, '', '--flag=a b'];
  assert.equal(argsListToString(args), `sh -c 'echo "it'\\''s" && sleep 1' '' '--flag=a b'`);
  assert.deepEqual(splitShellWords(argsListToString(args)), args);
});

test('the CLI and the console read a Docker-style env string alike', () => {
  const text = `-e TZ=UTC -e MSG="hello world" -e 'QUOTE=it'\\''s' -e PATHS=a\\ b -p 8080:8080 -p 5353:53/udp`;
  assert.deepEqual(parseEnv(text), { TZ: 'UTC', MSG: 'hello world', QUOTE: "it's", PATHS: 'a b', '-p 8080:8080': '1', '-p 5353:53/udp': '1' });
  assert.deepEqual(parseEnvString(text), {
    env: [{ key: 'TZ', value: 'UTC' }, { key: 'MSG', value: 'hello world' }, { key: 'QUOTE', value: "it's" }, { key: 'PATHS', value: 'a b' }],
    ports: [{ host: '8080', container: '8080', proto: 'tcp' }, { host: '5353', container: '53', proto: 'udp' }],
  });
});
