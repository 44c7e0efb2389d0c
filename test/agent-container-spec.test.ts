// The container an instance gets (pure): env without port keys, runtypes, GPU device requests for exactly the
// allocated indices, CPU/memory in proportion, disk limit only where the storage driver has one, labels, ports from
// the machine's range; and the Docker adapter's pure parts (create body, inspect reading, log framing).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { onstartArgs } from '../src/agent/onstart-args.js';
import {
  buildContainerSpec, keepAliveScript, LOG_MAX_FILES_DEFAULT, LOG_MAX_SIZE_MB_DEFAULT, PIDS_LIMIT_DEFAULT, splitEnv, wantedPorts, type MachineLimits,
} from '../src/agent/container-spec.js';
import {
  containerFromInspect, createDockerRuntime, dockerCreateOptions, dockerNetworkOptions, imageRef, ownerFilter, storageSizeSupported,
} from '../src/agent/docker-runtime.js';
import { ownerId } from '../src/agent/owner.js';
import { ownedBy } from '../src/agent/runtime.js';
import { demuxDockerLog, selectLogLines } from '../src/agent/docker-log.js';
import { canBind, parsePortRange, pickHostPorts } from '../src/agent/host-ports.js';
import { desiredInstance } from './agent-fake-server.js';
import type Dockerode from 'dockerode';

const M: MachineLimits = { machineId: 42, owner: '0123456789abcdef', cpuCores: 64, ramMb: 256 * 1024, gpuDevices: true };
const free = async () => true;

describe('container spec', () => {
  test('GPU device request for exactly the allocated indices; CPU and memory in proportion to the share', () => {
    const d = desiredInstance({ instance_id: 7, gpu_indices: [2, 0], cpu_share: 0.25, memory_share: 0.25 });
    const s = buildContainerSpec(d, M, {}, '0.0.0.0');
    assert.deepEqual(s.gpuDeviceIds, ['0', '2']);
    assert.equal(s.nanoCpus, 16 * 1e9);
    assert.equal(s.cpuShares, 256);
    assert.equal(s.memoryBytes, 64 * 1024 * 1024 * 1024);
    const o = dockerCreateOptions(s, false);
    assert.deepEqual(o.HostConfig!.DeviceRequests, [{ Driver: 'nvidia', DeviceIDs: ['0', '2'], Capabilities: [['gpu']] }]);
    assert.equal(o.HostConfig!.NanoCpus, 16 * 1e9);
    assert.equal(o.HostConfig!.Memory, 64 * 1024 * 1024 * 1024);
    assert.equal(o.HostConfig!.MemorySwap, 64 * 1024 * 1024 * 1024);
    assert.deepEqual(o.HostConfig!.RestartPolicy, { Name: 'no' });
  });

  test('the container is told its instance id, the host\'s public address and each TCP port\'s host port (client-compat-connect), over a renter\'s variable of the same name', () => {
    const d = desiredInstance({ instance_id: 7, ports: ['22/tcp', '8080/tcp', '5353/udp'], env: { GREETING: 'hi', CONTAINER_ID: '99', '-p 9000:9000': '1' } });
    const s = buildContainerSpec(d, { ...M, publicIp: '203.0.113.7' }, { '22/tcp': 40001, '8080/tcp': 40002, '5353/udp': 40003, '9000/tcp': 40004 }, '0.0.0.0');
    assert.deepEqual([...s.env].sort(), [
      'CONTAINER_ID=7', 'GREETING=hi', 'PUBLIC_IPADDR=203.0.113.7', 'VAST_TCP_PORT_22=40001', 'VAST_TCP_PORT_8080=40002', 'VAST_TCP_PORT_9000=40004',
    ]);
    // Without a known public address (an agent always has one: flag, hardware file or first IPv4), none is made up.
    assert.deepEqual(buildContainerSpec(desiredInstance({ instance_id: 8 }), M, {}, '0.0.0.0').env, ['CONTAINER_ID=8']);
  });

  test('an SSH instance\'s 22/tcp is held by the agent (labels), not published by Docker; other runtypes\' is Docker\'s', () => {
    for (const runtype of ['ssh', 'jupyter'] as const) {
      const s = buildContainerSpec(desiredInstance({ instance_id: 7, runtype, ports: ['22/tcp', '8080/tcp'] }), M, { '22/tcp': 40001, '8080/tcp': 40002 }, '127.0.0.1');
      assert.deepEqual(Object.keys(s.ports), ['8080/tcp']);
      assert.equal(s.labels['gpuplane.ssh_host_ip'], '127.0.0.1');
      assert.equal(s.labels['gpuplane.ssh_host_port'], '40001');
      assert.ok(s.env.includes('VAST_TCP_PORT_22=40001'), 'the container is still told its SSH port');
      assert.deepEqual(Object.keys(dockerCreateOptions(s, false).HostConfig!.PortBindings ?? {}), ['8080/tcp']);
    }
    const args = buildContainerSpec(desiredInstance({ instance_id: 7, runtype: 'args', ports: ['22/tcp'] }), M, { '22/tcp': 40001 }, '127.0.0.1');
    assert.deepEqual(Object.keys(args.ports), ['22/tcp']);
    assert.equal(args.labels['gpuplane.ssh_host_port'], undefined);
  });

  test('no device request on a host without the NVIDIA runtime, nor for an instance without GPUs', () => {
    assert.equal(buildContainerSpec(desiredInstance({ instance_id: 1 }), { ...M, gpuDevices: false }, {}, '0.0.0.0').gpuDeviceIds, null);
    const s = buildContainerSpec(desiredInstance({ instance_id: 1, gpu_indices: [] }), M, {}, '0.0.0.0');
    assert.equal(s.gpuDeviceIds, null);
    assert.deepEqual(dockerCreateOptions(s, false).HostConfig!.DeviceRequests, []);
  });

  test('tiny shares stay above Docker\'s minimums', () => {
    const s = buildContainerSpec(desiredInstance({ instance_id: 1, cpu_share: 1e-6, memory_share: 1e-9 }), M, {}, '0.0.0.0');
    assert.equal(s.nanoCpus, 10_000_000); // 0.01 CPU
    assert.equal(s.cpuShares, 2);
    assert.equal(s.memoryBytes, 6 * 1024 * 1024);
  });

  test('env: variables only; -p keys are ports, -h the hostname, other flags dropped', () => {
    const d = desiredInstance({
      instance_id: 3, runtype: 'args', ports: ['22/tcp'],
      env: { HF_TOKEN: 'hf_secret', MODE: 'train', '-p 8080:8080': '1', '-p 5000:5000/udp': '1', '-h': 'box1', '-e': 'x', 'not valid': 'y' },
    });
    assert.deepEqual(splitEnv(d.env), { vars: [['HF_TOKEN', 'hf_secret'], ['MODE', 'train']], ports: ['8080/tcp', '5000/udp'], hostname: 'box1' });
    assert.deepEqual(wantedPorts(d), ['22/tcp', '5000/udp', '8080/tcp']);
    const s = buildContainerSpec(d, M, { '22/tcp': 40001, '5000/udp': 40002, '8080/tcp': 40003 }, '127.0.0.1');
    const env = ['HF_TOKEN=hf_secret', 'MODE=train', 'CONTAINER_ID=3', 'VAST_TCP_PORT_22=40001', 'VAST_TCP_PORT_8080=40003'];
    assert.deepEqual(s.env, env);
    assert.equal(s.hostname, 'box1');
    const o = dockerCreateOptions(s, false);
    assert.deepEqual(o.Env, env);
    assert.deepEqual(o.ExposedPorts, { '22/tcp': {}, '5000/udp': {}, '8080/tcp': {} });
    assert.deepEqual(o.HostConfig!.PortBindings, {
      '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40001' }],
      '5000/udp': [{ HostIp: '127.0.0.1', HostPort: '40002' }],
      '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '40003' }],
    });
    assert.equal(o.Hostname, 'box1');
  });

  test('a port without a chosen host port is a bug, not a silent omission', () => {
    assert.throws(() => buildContainerSpec(desiredInstance({ instance_id: 3, ports: ['22/tcp'] }), M, {}, '0.0.0.0'), /no host port chosen for 22\/tcp/);
  });

  test('args: the image\'s entrypoint kept, args as the command; null args keep the image\'s command too', () => {
    const s = buildContainerSpec(desiredInstance({ instance_id: 5, runtype: 'args', args: ['python', 'train.py', '--lr', '0.1'], onstart: 'echo ignored' }), M, {}, '0.0.0.0');
    assert.equal(s.entrypoint, null);
    assert.deepEqual(s.cmd, ['python', 'train.py', '--lr', '0.1']);
    const o = dockerCreateOptions(s, false);
    assert.equal('Entrypoint' in o, false);
    assert.deepEqual(o.Cmd, ['python', 'train.py', '--lr', '0.1']);
    const plain = dockerCreateOptions(buildContainerSpec(desiredInstance({ instance_id: 5, runtype: 'args' }), M, {}, '0.0.0.0'), false);
    assert.equal('Cmd' in plain, false);
  });

  test('ssh and jupyter: our entrypoint with the keys and onstart, no command; jupyter\'s also starts Jupyter (issue 32)', () => {
    for (const runtype of ['ssh', 'jupyter'] as const) {
      const s = buildContainerSpec(desiredInstance({ instance_id: 6, runtype, ssh_keys: ['ssh-ed25519 AAAAC3Nz me@laptop'], onstart: 'echo hi' }), M, {}, '0.0.0.0');
      assert.deepEqual(s.entrypoint!.slice(0, 2), ['/bin/sh', '-c']);
      const jupyter = runtype === 'jupyter' ? { lab: false, dir: '/root' } : null;
      assert.equal(s.entrypoint![2], keepAliveScript(['ssh-ed25519 AAAAC3Nz me@laptop'], 'echo hi', jupyter));
      assert.equal(s.entrypoint![2].includes('command -v jupyter'), runtype === 'jupyter');
      assert.deepEqual(s.cmd, []);
    }
  });

  test('the keep-alive script writes keys and onstart verbatim, whatever quotes they hold, and runs onstart', () => {
    const onstart = `echo "it's $HOME"\nprintf '%s\\n' done`;
    const key = "ssh-rsa AAAAB3 o'brien@host";
    const script = keepAliveScript([key], onstart);
    // Run the parts that write files, in a scratch root, with the real shell.
    const root = execFileSync('mktemp', ['-d']).toString().trim();
    const prefix = script.split('\n').filter((l) => !l.startsWith('while') && !l.startsWith('sh /root') && !l.startsWith('if command')).join('\n').replaceAll('/root', root);
    // The onstart comes as the shell's arguments after `$0`, as the entrypoint passes it (onstart-args.ts).
    execFileSync('/bin/sh', ['-c', prefix, 'sh', ...onstartArgs(onstart)]);
    assert.equal(execFileSync('cat', [`${root}/.ssh/authorized_keys`]).toString(), `${key}\n`);
    assert.equal(execFileSync('cat', [`${root}/onstart.sh`]).toString(), `${onstart}\n`);
    assert.equal(execFileSync('/bin/sh', [`${root}/onstart.sh`], { env: { HOME: '/h' } }).toString(), "it's /h\ndone\n");
    execFileSync('rm', ['-rf', root]);
    assert.match(script, /sh \/root\/onstart\.sh & wait \$!/);
    assert.match(script, /trap 'exit 0' TERM INT/);
    assert.doesNotMatch(keepAliveScript([], null), /onstart|authorized_keys/);
  });

  test('labels name machine, owner, instance and generation; the name is fixed per instance and owner', () => {
    const s = buildContainerSpec(desiredInstance({ instance_id: 9, generation: 4 }), M, {}, '0.0.0.0');
    assert.equal(s.name, 'gpuplane-42-9-0123456789abcdef');
    assert.deepEqual(s.labels, { 'gpuplane.machine_id': '42', 'gpuplane.owner': '0123456789abcdef', 'gpuplane.instance_id': '9', 'gpuplane.generation': '4' });
  });

  test('issue 29 item 6: two registrations never share an owner id, nor a name for the same machine and instance', () => {
    const [a, b] = [ownerId('registration-aaaaaaaaaaaaaaaa'), ownerId('registration-bbbbbbbbbbbbbbbb')];
    assert.match(a, /^[0-9a-f]{16}$/);
    assert.equal(ownerId('registration-aaaaaaaaaaaaaaaa'), a, 'the same registration, the same owner after a restart');
    assert.notEqual(a, b);
    const d = desiredInstance({ instance_id: 1 });
    assert.notEqual(buildContainerSpec(d, { ...M, owner: a }, {}, '0.0.0.0').name, buildContainerSpec(d, { ...M, owner: b }, {}, '0.0.0.0').name);
    assert.deepEqual(ownerFilter({ machineId: 42, owner: a }), ['gpuplane.machine_id=42', `gpuplane.owner=${a}`]);
    assert.equal(ownedBy({ 'gpuplane.machine_id': '42', 'gpuplane.owner': a }, { machineId: 42, owner: a }), true);
    assert.equal(ownedBy({ 'gpuplane.machine_id': '42', 'gpuplane.owner': b }, { machineId: 42, owner: a }), false);
    assert.equal(ownedBy({ 'gpuplane.machine_id': '42' }, { machineId: 42, owner: a }), false, 'a container from before owner labels');
    assert.equal(ownedBy({ 'gpuplane.machine_id': '420', 'gpuplane.owner': a }, { machineId: 42, owner: a }), false);
  });

  test('issue 29 item 13: a network of its own, every capability but the kept ones dropped, no-new-privileges', () => {
    const s = buildContainerSpec(desiredInstance({ instance_id: 9 }), M, {}, '0.0.0.0');
    assert.equal(s.network.name, 'gpuplane-42-9-0123456789abcdef');
    assert.match(s.network.bridge, /^gpb[0-9a-f]{12}$/, 'a Linux interface name (15 characters) under the firewall rule\'s prefix');
    assert.deepEqual(s.network.labels, { 'gpuplane.machine_id': '42', 'gpuplane.owner': '0123456789abcdef', 'gpuplane.instance_id': '9' });
    assert.notEqual(buildContainerSpec(desiredInstance({ instance_id: 10 }), M, {}, '0.0.0.0').network.bridge, s.network.bridge);
    const n = dockerNetworkOptions(s.network);
    assert.deepEqual(n.Options, { 'com.docker.network.bridge.name': s.network.bridge, 'com.docker.network.bridge.enable_icc': 'false' });
    assert.equal(n.Internal, false, 'a workload needs the internet; the host is kept out by the firewall rule');
    const h = dockerCreateOptions(s, false).HostConfig!;
    assert.equal(h.NetworkMode, s.network.name);
    assert.deepEqual(h.CapDrop, ['ALL']);
    assert.deepEqual(h.CapAdd, ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'SETUID', 'SETGID', 'SYS_CHROOT', 'KILL', 'NET_BIND_SERVICE']);
    for (const cap of ['NET_RAW', 'MKNOD', 'AUDIT_WRITE', 'SETFCAP', 'SETPCAP', 'SYS_ADMIN', 'NET_ADMIN']) assert.equal(h.CapAdd!.includes(cap), false, cap);
    assert.deepEqual(h.SecurityOpt, ['no-new-privileges']);
  });

  test('issue 29 item 14: a pids limit and log rotation, by default and as the operator sets them', () => {
    const d = desiredInstance({ instance_id: 9 });
    const h = dockerCreateOptions(buildContainerSpec(d, M, {}, '0.0.0.0'), false).HostConfig!;
    assert.equal(h.PidsLimit, PIDS_LIMIT_DEFAULT);
    assert.deepEqual(h.LogConfig, { Type: 'json-file', Config: { 'max-size': `${LOG_MAX_SIZE_MB_DEFAULT}m`, 'max-file': String(LOG_MAX_FILES_DEFAULT) } });
    const set = dockerCreateOptions(buildContainerSpec(d, { ...M, pidsLimit: 64, logMaxSizeMb: 5, logMaxFiles: 2 }, {}, '0.0.0.0'), false).HostConfig!;
    assert.equal(set.PidsLimit, 64);
    assert.deepEqual(set.LogConfig, { Type: 'json-file', Config: { 'max-size': '5m', 'max-file': '2' } });
  });

  test('disk size as a storage option only where the driver has one', () => {
    const s = buildContainerSpec(desiredInstance({ instance_id: 9, disk: 32.5 }), M, {}, '0.0.0.0');
    assert.deepEqual(dockerCreateOptions(s, true).HostConfig!.StorageOpt, { size: '33G' });
    assert.equal('StorageOpt' in dockerCreateOptions(s, false).HostConfig!, false);
    assert.equal(storageSizeSupported('overlay2', 'extfs'), false);
    assert.equal(storageSizeSupported('overlay2', 'xfs'), true);
    assert.equal(storageSizeSupported('btrfs', undefined), true);
    assert.equal(storageSizeSupported('zfs', undefined), true);
    assert.equal(storageSizeSupported('vfs', undefined), false);
  });

  test('image references get :latest only when they name no tag or digest', () => {
    assert.equal(imageRef('busybox'), 'busybox:latest');
    assert.equal(imageRef('pytorch/pytorch:2.3.0-cuda12.1'), 'pytorch/pytorch:2.3.0-cuda12.1');
    assert.equal(imageRef('localhost:5000/team/img'), 'localhost:5000/team/img:latest');
    assert.equal(imageRef('ghcr.io/o/i@sha256:abc'), 'ghcr.io/o/i@sha256:abc');
  });
});

describe('host ports', () => {
  test('the lowest free ports of the range, skipping reserved ones and ones something else holds', async () => {
    const held = new Set([40001]);
    const r = await pickHostPorts(['22/tcp', '8080/tcp', '53/udp'], { start: 40000, end: 40010 }, [40000, 40002], async (p) => !held.has(p));
    assert.deepEqual(r, { '22/tcp': 40003, '8080/tcp': 40004, '53/udp': 40005 });
  });

  test('a range with too few free ports is an error naming the range', async () => {
    await assert.rejects(pickHostPorts(['22/tcp', '80/tcp'], { start: 40000, end: 40001 }, [40000], free), /no free host port left in 40000-40001 for 80\/tcp/);
  });

  test('canBind sees a port another program holds', async () => {
    const { createServer } = await import('node:net');
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as { port: number }).port;
    assert.equal(await canBind('127.0.0.1', port, 'tcp'), false);
    await new Promise<void>((r) => srv.close(() => r()));
    assert.equal(await canBind('127.0.0.1', port, 'tcp'), true);
  });

  test('port ranges', () => {
    assert.deepEqual(parsePortRange('40000-40999'), { start: 40000, end: 40999 });
    assert.throws(() => parsePortRange('40999-40000'));
    assert.throws(() => parsePortRange('0-10'));
    assert.throws(() => parsePortRange('40000'));
  });
});

describe('Docker adapter, pure parts', () => {
  test('inspect: labels, exit code, finish time, bound ports, the real mapping only while running', () => {
    const base = {
      Id: 'abc123', Name: '/gpuplane-42-9',
      Config: { Labels: { 'gpuplane.machine_id': '42', 'gpuplane.instance_id': '9', 'gpuplane.generation': '4' } },
      HostConfig: { PortBindings: { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40001' }] } },
      NetworkSettings: { Ports: { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40001' }], '8080/tcp': null } },
    };
    const running = containerFromInspect({ ...base, State: { Status: 'running', Running: true, ExitCode: 0, FinishedAt: '0001-01-01T00:00:00Z' } } as unknown as Dockerode.ContainerInspectInfo);
    assert.deepEqual(running, {
      id: 'abc123', name: 'gpuplane-42-9', instanceId: 9, generation: 4, status: 'running', exitCode: null, finishedAt: null,
      boundHostPorts: [40001], ports: { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40001' }] }, sshHostPort: null,
    });
    const exited = containerFromInspect({ ...base, State: { Status: 'exited', Running: false, ExitCode: 3, FinishedAt: '2027-01-15T08:00:00.5Z' } } as unknown as Dockerode.ContainerInspectInfo);
    assert.deepEqual([exited.exitCode, exited.finishedAt, exited.ports, exited.boundHostPorts], [3, 1_800_000_000.5, {}, [40001]]);
  });

  test('inspect: the SSH port the agent holds (labels) is reserved, and shown as 22/tcp only while running', () => {
    const base = {
      Id: 'abc124', Name: '/gpuplane-42-10',
      Config: { Labels: { 'gpuplane.machine_id': '42', 'gpuplane.instance_id': '10', 'gpuplane.ssh_host_ip': '127.0.0.1', 'gpuplane.ssh_host_port': '40005' } },
      HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '40006' }] } },
      NetworkSettings: { Ports: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '40006' }] } },
    };
    const running = containerFromInspect({ ...base, State: { Status: 'running', Running: true } } as unknown as Dockerode.ContainerInspectInfo);
    assert.deepEqual(running.sshHostPort, { hostIp: '127.0.0.1', hostPort: 40005 });
    assert.deepEqual(running.boundHostPorts, [40006, 40005]);
    assert.deepEqual(running.ports, { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '40006' }], '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40005' }] });
    const exited = containerFromInspect({ ...base, State: { Status: 'exited', Running: false, ExitCode: 0 } } as unknown as Dockerode.ContainerInspectInfo);
    assert.deepEqual([exited.ports, exited.boundHostPorts], [{}, [40006, 40005]]);
    // A label that is not a port is no port.
    const bad = { ...base, Config: { Labels: { ...base.Config.Labels, 'gpuplane.ssh_host_port': '70000' } } };
    assert.equal(containerFromInspect({ ...bad, State: { Status: 'running', Running: true } } as unknown as Dockerode.ContainerInspectInfo).sshHostPort, null);
  });

  test('log frames: stdout and stderr in the order written; unframed text as it is', () => {
    const frame = (type: number, text: string) => {
      const body = Buffer.from(text);
      const h = Buffer.alloc(8);
      h[0] = type;
      h.writeUInt32BE(body.length, 4);
      return Buffer.concat([h, body]);
    };
    assert.equal(demuxDockerLog(Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')])), 'out 1\nerr 1\nout 2\n');
    assert.equal(demuxDockerLog(Buffer.from('plain tty output\n')), 'plain tty output\n');
    assert.equal(demuxDockerLog(Buffer.alloc(0)), '');
  });

  test('log answers: filter, then tail, then the character cap from the end', () => {
    const text = 'a 1\nb 2\na 3\na 4\n';
    assert.equal(selectLogLines(text, null, null, 100), text);
    assert.equal(selectLogLines(text, 2, null, 100), 'a 3\na 4\n');
    assert.equal(selectLogLines(text, 2, 'a', 100), 'a 3\na 4\n');
    assert.equal(selectLogLines(text, null, 'b', 100), 'b 2\n');
    assert.equal(selectLogLines(text, null, null, 4), 'a 4\n');
    assert.equal(selectLogLines('', 5, null, 100), '');
  });
});

describe('Docker runtime: images', () => {
  /** A stand-in Dockerode client: knows `local` images, records pulls, answers progress with `progress`. */
  function client(local: string[], progress: object[]) {
    const pulls: [string, unknown][] = [];
    const stub = {
      getImage: (ref: string) => ({
        inspect: async () => {
          if (!local.includes(ref)) throw Object.assign(new Error('no such image'), { statusCode: 404 });
          return {};
        },
      }),
      pull: async (ref: string, opts: unknown) => {
        pulls.push([ref, opts]);
        return {};
      },
      modem: { followProgress: (_s: unknown, done: (err: Error | null, out: object[]) => void) => done(null, progress) },
    };
    return { pulls, runtime: createDockerRuntime({}, stub as unknown as Dockerode) };
  }

  test('a local image is used as it is; a missing one is pulled with the registry login', async () => {
    const c = client(['busybox:latest'], [{ status: 'Download complete' }]);
    await c.runtime.ensureImage('busybox', null);
    assert.deepEqual(c.pulls, []);
    await c.runtime.ensureImage('ghcr.io/team/private', { username: 'bot', password: 'tok', server: 'ghcr.io' });
    assert.deepEqual(c.pulls, [['ghcr.io/team/private:latest', { authconfig: { username: 'bot', password: 'tok', serveraddress: 'ghcr.io' } }]]);
    await c.runtime.ensureImage('public/img:1', null);
    assert.deepEqual(c.pulls[1], ['public/img:1', {}]);
  });

  test('a pull whose stream ends with an error message fails with it', async () => {
    const c = client([], [{ status: 'Pulling' }, { error: 'unauthorized: authentication required' }]);
    await assert.rejects(c.runtime.ensureImage('private/x:1', null), /pull of private\/x:1 failed: unauthorized: authentication required/);
  });
});
