// Template merge into instance creation (spec: Create instance rules 1-4; template env in Docker-flag form, instance
// env in object form; a template's volume_info attaches nothing). Pure functions: unit tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EnvParseError,
  mergeTemplateIntoRequest,
  parseDockerEnv,
  templateImageRef,
  templateRuntype,
  type TemplateForCreate,
} from '../src/templates/templates-contract.js';

function template(overrides: Partial<TemplateForCreate> = {}): TemplateForCreate {
  return {
    id: 7, hash_id: 'a'.repeat(32), name: 't', image: 'pytorch/pytorch', tag: '2.1', env: '-e A=template -e B=kept -p 8080:8080',
    onstart: 'echo template', runtype: 'ssh', args_str: '', ssh_direct: true, use_ssh: true, jup_direct: false,
    jupyter_dir: '/workspace', use_jupyter_lab: true, docker_login_repo: 'registry.example.com', docker_login_user: 'bob',
    docker_login_pass: 's3cret', extra_filters: { gpu_ram: { gte: 20000 }, verified: { eq: true } },
    recommended_disk_space: 30, volume_info: { volume_id: 99, mount_path: '/data', create_new: false }, ...overrides,
  };
}

test('parseDockerEnv: -e and -p into the instance object form, quotes and other flags kept', () => {
  assert.deepEqual(
    parseDockerEnv(`-p 3000:3000 -e MODEL_ARGS='--model-id X --quantize gptq' -e "Q=a \\"b\\"" -p 8081:8081/udp -h myhost --env=TZ=UTC -e EMPTY=`),
    { '-p 3000:3000': '1', MODEL_ARGS: '--model-id X --quantize gptq', Q: 'a "b"', '-p 8081:8081/udp': '1', '-h': 'myhost', TZ: 'UTC', EMPTY: '' },
  );
  assert.deepEqual(parseDockerEnv(''), {});
  assert.deepEqual(parseDockerEnv(null), {});
  assert.deepEqual(parseDockerEnv('-e A=1 -e A=2'), { A: '2' }, 'a later -e wins, as in docker run');
  assert.deepEqual(parseDockerEnv('-e URL=http://x/?a=b=c'), { URL: 'http://x/?a=b=c' }, 'only the first = splits');
});

test('parseDockerEnv: rejects what is not Docker-flag form', () => {
  for (const bad of ['NAME=value', '-e', '-e 1BAD=x', "-e A='open", '-p notaport', '-p']) {
    assert.throws(() => parseDockerEnv(bad), EnvParseError, bad);
  }
});

test('rule 1: request scalars override the template; the template fills what the request leaves null', () => {
  const m = mergeTemplateIntoRequest(template(), {
    image: 'my/image:1', disk: 50, runtype: 'jupyter_direct', onstart: 'echo mine', args_str: null,
    use_jupyter_lab: false, jupyter_dir: null, label: 'keep-me',
  });
  assert.equal(m.image, 'my/image:1');
  assert.equal(m.disk, 50);
  assert.equal(m.runtype, 'jupyter_direct');
  assert.equal(m.onstart, 'echo mine');
  assert.equal(m.use_jupyter_lab, false);
  assert.equal(m.jupyter_dir, '/workspace');
  assert.equal(m.label, 'keep-me', 'fields the merge does not know pass through');

  const f = mergeTemplateIntoRequest(template(), { image: null, disk: null, runtype: null, onstart: null });
  assert.equal(f.image, 'pytorch/pytorch:2.1');
  assert.equal(f.disk, 30, 'recommended_disk_space when the request gives no disk');
  assert.equal(f.runtype, 'ssh_direct');
  assert.equal(f.onstart, 'echo template');
  assert.equal(f.use_jupyter_lab, true);
  assert.equal(f.template_id, 7);
  assert.equal(f.template_hash_id, 'a'.repeat(32));
});

test('rule 2: env merged; template keys kept, new keys added, the request wins on conflict', () => {
  const m = mergeTemplateIntoRequest(template(), { env: { A: 'request', C: 'new', '-p 9000:9000': '1' } });
  assert.deepEqual(m.env, { A: 'request', B: 'kept', '-p 8080:8080': '1', C: 'new', '-p 9000:9000': '1' });
  assert.deepEqual(mergeTemplateIntoRequest(template(), { env: null }).env, { A: 'template', B: 'kept', '-p 8080:8080': '1' });
});

test('rule 3: extra_filters merged by key, the request wins', () => {
  const m = mergeTemplateIntoRequest(template(), { extra_filters: { gpu_ram: { gte: 40000 }, num_gpus: { eq: 2 } } });
  assert.deepEqual(m.extra_filters, { gpu_ram: { gte: 40000 }, verified: { eq: true }, num_gpus: { eq: 2 } });
});

test('rule 4: registry credentials carry over and form image_login unless the request has one', () => {
  const m = mergeTemplateIntoRequest(template(), {});
  assert.equal(m.docker_login_repo, 'registry.example.com');
  assert.equal(m.docker_login_user, 'bob');
  assert.equal(m.docker_login_pass, 's3cret');
  assert.equal(m.image_login, '-u bob -p s3cret registry.example.com');
  assert.equal(mergeTemplateIntoRequest(template(), { image_login: '-u me -p tok ghcr.io' }).image_login, '-u me -p tok ghcr.io');
  assert.equal(mergeTemplateIntoRequest(template({ docker_login_user: '', docker_login_pass: '' }), {}).image_login, null);
});

test("a template's volume_info attaches nothing; only the request's survives", () => {
  assert.equal(mergeTemplateIntoRequest(template(), {}).volume_info, null);
  const own = { volume_id: 3, mount_path: '/mnt', create_new: false };
  assert.deepEqual(mergeTemplateIntoRequest(template(), { volume_info: own }).volume_info, own);
});

test('image ref and runtype helpers', () => {
  assert.equal(templateImageRef('ubuntu', 'latest'), 'ubuntu:latest');
  assert.equal(templateImageRef('localhost:5000/img', 'v1'), 'localhost:5000/img:v1', 'a registry port is not a tag');
  assert.equal(templateImageRef('ghcr.io/x/y:1.0.3', 'latest'), 'ghcr.io/x/y:1.0.3');
  assert.equal(templateImageRef('img@sha256:abc', 'latest'), 'img@sha256:abc');
  assert.equal(templateRuntype({ runtype: 'jupyter', jup_direct: true, ssh_direct: false }), 'jupyter_direct');
  assert.equal(templateRuntype({ runtype: 'jupyter', jup_direct: false, ssh_direct: false }), 'jupyter_proxy');
  assert.equal(templateRuntype({ runtype: 'ssh', jup_direct: false, ssh_direct: false }), 'ssh_proxy');
  assert.equal(templateRuntype({ runtype: 'args', jup_direct: true, ssh_direct: true }), 'args');
});
