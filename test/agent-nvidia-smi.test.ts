// Hardware discovery: the nvidia-smi parser on captured outputs of several GPU models and driver versions
// (test/fixtures/nvidia-smi/), and the discovery path end to end through a fake `nvidia-smi` on PATH.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cudaForDriver, marketplaceGpuName, parseCudaVersion, parseGpuQuery, pcieBandwidth, QUERY_FIELDS, QUERY_FIELDS_WITHOUT_COMPUTE_CAP,
} from '../src/agent/nvidia-smi.js';
import { discoverGpus, discoveredHardware, DiscoveryError, programRunner, type HostFacts } from '../src/agent/hardware.js';

const FIX = join(import.meta.dirname, 'fixtures', 'nvidia-smi');
const capture = (name: string) => readFileSync(join(FIX, name), 'utf8');
const HOST: HostFacts = { cpuName: 'AMD EPYC 7543 32-Core Processor', cpuCores: 64, cpuArch: 'amd64', ramMb: 515_000, hostname: 'gpu-07', firstIpv4: '10.0.0.7' };
const ADDR = { publicIp: '203.0.113.7', portRange: { start: 40000, end: 40999 } };

describe('nvidia-smi --query-gpu parser', () => {
  test('the query asks for the documented field names, in CSV without header or units', () => {
    assert.deepEqual(QUERY_FIELDS, ['index', 'name', 'uuid', 'memory.total', 'driver_version', 'pcie.link.gen.max', 'pcie.link.width.max', 'power.limit', 'compute_cap']);
  });

  test('RTX 4090, driver 550', () => {
    assert.deepEqual(parseGpuQuery(capture('rtx4090-550.csv')), [{
      index: 0, name: 'NVIDIA GeForce RTX 4090', uuid: 'GPU-3b2e0b6a-8f4c-2d1e-9a7b-5c6d7e8f9a0b', gpu_ram: 24564,
      driver_version: '550.54.14', pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890,
    }]);
  });

  test('4x A100 80GB SXM4, driver 535', () => {
    const gpus = parseGpuQuery(capture('a100-80gb-535-4x.csv'));
    assert.deepEqual(gpus.map((g) => g.index), [0, 1, 2, 3]);
    for (const g of gpus) {
      assert.equal(g.name, 'NVIDIA A100-SXM4-80GB');
      assert.equal(g.gpu_ram, 81920);
      assert.equal(g.driver_version, '535.104.05');
      assert.equal(g.compute_cap, 800);
      assert.equal(g.gpu_max_power, 400);
    }
  });

  test('8x H100, driver 560: PCIe 5', () => {
    const gpus = parseGpuQuery(capture('h100-560-8x.csv'));
    assert.equal(gpus.length, 8);
    assert.deepEqual({ ...gpus[7], uuid: undefined }, {
      index: 7, name: 'NVIDIA H100 80GB HBM3', uuid: undefined, gpu_ram: 81559, driver_version: '560.35.03', pci_gen: 5, pcie_width: 16,
      gpu_max_power: 700, compute_cap: 900,
    });
  });

  test('[N/A] and [Not Supported] become null; a x8 slot stays x8', () => {
    const gpus = parseGpuQuery(capture('rtx3090-535-4x-na.csv'));
    assert.equal(gpus[1].pcie_width, 8);
    assert.deepEqual([gpus[2].pci_gen, gpus[2].pcie_width, gpus[2].gpu_max_power], [null, null, null]);
    assert.equal(gpus[3].uuid, null);
    assert.equal(gpus[3].gpu_max_power, null);
    assert.equal(gpus[3].pci_gen, 3);
  });

  test('a driver before 510, queried without compute_cap', () => {
    const gpus = parseGpuQuery(capture('t4-470-2x.csv'), QUERY_FIELDS_WITHOUT_COMPUTE_CAP);
    assert.deepEqual(gpus.map((g) => [g.name, g.gpu_ram, g.pci_gen, g.compute_cap]), [['Tesla T4', 15360, 3, null], ['Tesla T4', 15360, 3, null]]);
  });

  test('rows out of order are sorted by index; output of another shape is refused', () => {
    const lines = capture('a100-80gb-535-4x.csv').trim().split('\n').reverse().join('\n');
    assert.deepEqual(parseGpuQuery(lines).map((g) => g.index), [0, 1, 2, 3]);
    assert.throws(() => parseGpuQuery('0, NVIDIA GeForce RTX 4090, 24564\n'), /3 columns where 9 were asked for/);
    assert.throws(() => parseGpuQuery(capture('rtx4090-550.csv').replace('24564', 'lots')), /not a number/);
  });
});

describe('the banner, the model name, the bandwidth', () => {
  test('CUDA version from the banner of each driver generation; N/A is null', () => {
    assert.equal(parseCudaVersion(capture('rtx4090-550.banner.txt')), 12.4);
    assert.equal(parseCudaVersion(capture('a100-80gb-535-4x.banner.txt')), 12.2);
    assert.equal(parseCudaVersion(capture('h100-560-8x.banner.txt')), 12.6);
    assert.equal(parseCudaVersion(capture('t4-470-2x.banner.txt')), 11.4);
    assert.equal(parseCudaVersion(capture('rtx3090-535-4x-na.banner.txt')), null);
  });

  test('CUDA version from the driver branch when the banner does not say', () => {
    assert.equal(cudaForDriver('535.183.01'), 12.2);
    assert.equal(cudaForDriver('550.127.05'), 12.4);
    assert.equal(cudaForDriver('580.65.06'), 12.9);
    assert.equal(cudaForDriver('390.157'), null);
  });

  test('marketplace names of real product names', () => {
    const names: [string, string][] = [
      ['NVIDIA GeForce RTX 4090', 'RTX 4090'],
      ['NVIDIA GeForce RTX 3090 Ti', 'RTX 3090 Ti'],
      ['NVIDIA A100-SXM4-80GB', 'A100 SXM4'],
      ['NVIDIA A100-SXM4-40GB', 'A100 SXM4'],
      ['NVIDIA A100-PCIE-40GB', 'A100 PCIE'],
      ['NVIDIA A100 80GB PCIe', 'A100 PCIE'],
      ['NVIDIA H100 80GB HBM3', 'H100 SXM'],
      ['NVIDIA H100 PCIe', 'H100 PCIE'],
      ['NVIDIA H100 NVL', 'H100 NVL'],
      ['NVIDIA H200', 'H200'],
      ['Tesla V100-SXM2-16GB', 'Tesla V100'],
      ['Tesla T4', 'Tesla T4'],
      ['NVIDIA RTX A6000', 'RTX A6000'],
      ['NVIDIA RTX 6000 Ada Generation', 'RTX 6000Ada'],
      ['NVIDIA L40S', 'L40S'],
    ];
    for (const [product, name] of names) assert.equal(marketplaceGpuName(product), name, product);
  });

  test('PCIe bandwidth per GPU from generation and width', () => {
    assert.equal(pcieBandwidth(4, 16), 31.5);
    assert.equal(pcieBandwidth(5, 16), 63);
    assert.equal(pcieBandwidth(3, 16), 15.8);
    assert.equal(pcieBandwidth(4, 8), 15.8);
    assert.equal(pcieBandwidth(null, 16), null);
  });
});

describe('the machine summary', () => {
  test('a 4x box with unknown fields: lowest known figures, per-GPU detail kept', () => {
    const gpus = parseGpuQuery(capture('rtx3090-535-4x-na.csv'));
    const hw = discoveredHardware({ gpus, driver_version: '535.183.01', cuda_max_good: 12.2 }, HOST, 1834.5, ADDR);
    assert.equal(hw.gpu_name, 'RTX 3090');
    assert.equal(hw.num_gpus, 4);
    assert.equal(hw.gpu_ram, 24576);
    assert.equal(hw.compute_cap, 860);
    assert.equal(hw.pci_gen, 3);
    assert.equal(hw.pcie_bw, 15.8); // gen 4 x8 and gen 3 x16 both give 15.8 GB/s
    assert.equal(hw.gpu_max_power, 350);
    assert.equal(hw.gpus.length, 4);
    assert.equal('driver_version' in hw.gpus[0], false);
    assert.deepEqual(
      [hw.cpu_name, hw.cpu_cores, hw.cpu_ram, hw.disk_space, hw.hostname, hw.public_ipaddr, hw.direct_port_start, hw.direct_port_end, hw.hardware_declared],
      ['AMD EPYC 7543 32-Core Processor', 64, 515_000, 1834.5, 'gpu-07', '203.0.113.7', 40000, 40999, false],
    );
  });

  test('GPUs of different models are refused', () => {
    const mixed = [...parseGpuQuery(capture('rtx4090-550.csv')), { ...parseGpuQuery(capture('rtx3090-535-4x-na.csv'))[0], index: 1 }];
    assert.throws(() => discoveredHardware({ gpus: mixed, driver_version: '550.54.14', cuda_max_good: 12.4 }, HOST, 100, ADDR), /different models \(RTX 4090, RTX 3090\)/);
  });
});

describe('discovery through a fake nvidia-smi on PATH', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-smi-'));
  copyFileSync(join(FIX, 'fake-nvidia-smi.sh'), join(dir, 'nvidia-smi'));
  const runner = (capture: string) => programRunner({ ...process.env, PATH: `${dir}:${process.env.PATH}`, FAKE_NVIDIA_SMI: join(FIX, capture) });

  test('8x H100: every GPU, the driver, CUDA from the banner', async () => {
    const d = await discoverGpus(runner('h100-560-8x'));
    assert.equal(d.gpus.length, 8);
    assert.equal(d.driver_version, '560.35.03');
    assert.equal(d.cuda_max_good, 12.6);
    assert.equal(discoveredHardware(d, HOST, 100, ADDR).gpu_name, 'H100 SXM');
  });

  // Captured on a real H200 (driver 580.159.04, CUDA 13.0) by scripts/gpu-probe.sh on a device machine, 2026-11-28.
  test('a real H200, driver 580: every field as the driver printed it, offered as "H200", CUDA 13.0 from the banner', async () => {
    const d = await discoverGpus(runner('h200-580-1x'));
    assert.deepEqual(d, {
      gpus: [{
        index: 0, name: 'NVIDIA H200', uuid: 'GPU-dadbf999-5d58-0d50-ec0b-73eda7769b25', gpu_ram: 143771, driver_version: '580.159.04',
        pci_gen: 5, pcie_width: 16, gpu_max_power: 700, compute_cap: 900,
      }],
      driver_version: '580.159.04',
      cuda_max_good: 13,
    });
    const hw = discoveredHardware(d, HOST, 100, ADDR);
    assert.deepEqual([hw.gpu_name, hw.num_gpus, hw.gpu_ram, hw.pcie_bw, hw.compute_cap], ['H200', 1, 143771, 63, 900]);
    // The UUID discovery gives is the one `nvidia-smi -L` (what a container's CUDA sees) lists.
    assert.match(capture('h200-580-1x.list.txt'), new RegExp(`^GPU 0: NVIDIA H200 \\(UUID: ${d.gpus[0].uuid}\\)$`, 'm'));
  });

  test('driver 470 refuses compute_cap: asked again without it', async () => {
    const d = await discoverGpus(runner('t4-470-2x'));
    assert.deepEqual(d.gpus.map((g) => [g.index, g.compute_cap]), [[0, null], [1, null]]);
    assert.equal(d.cuda_max_good, 11.4);
  });

  test('banner without a CUDA version: from the driver branch', async () => {
    const d = await discoverGpus(runner('rtx3090-535-4x-na'));
    assert.equal(d.cuda_max_good, 12.2);
  });

  test('no nvidia-smi on PATH, or one that fails, is a DiscoveryError saying what to do', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'gpuplane-nosmi-'));
    await assert.rejects(discoverGpus(programRunner({ PATH: empty })), (e: Error) => e instanceof DiscoveryError && /--hardware FILE/.test(e.message));
    await assert.rejects(discoverGpus(runner('no-such-capture')), (e: Error) => e instanceof DiscoveryError && /nvidia-smi/.test(e.message));
    rmSync(empty, { recursive: true });
  });

  test.after(() => rmSync(dir, { recursive: true, force: true }));
});
