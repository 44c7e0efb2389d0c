// The layers of src/ and their rules, in executable form (docs/DEVELOPING.md, "Layers and their rules").
// Run by `npm test` before the tests: `depcruise src --config .dependency-cruiser.cjs`.
// Type-only imports count too: a feature that needs another's types depends on it all the same.

/** The composition root: the only files that know every feature (and the emulator), and the migrations it lists. */
const ROOT = '^src/((app|services|routes|main|database)\\.ts$|migrations/)';

/** A feature's public module: what other features may import of it. */
const PUBLIC_MODULE = '^src/[^/]+/[^/]*-(service|contract|schemas|types|constants)\\.ts$';

/** A schema or type module of the server: TypeBox schemas and types, nothing that runs on the server only. */
const SCHEMA_MODULE = '^src/(?!platform/lazy-schemas)[^/]+/[^/]*(schemas|types|constants)\\.ts$';

const exact = (file) => `^${file.replace(/[.]/g, '\\.')}$`;

/**
 * The imports into another feature's internals that remain, each with its reason. An entry is a file and the other
 * features' modules it may import besides their public ones; anything else it imports is checked as everywhere.
 */
const EXCEPTIONS = {
  'src/emulator/simulated-hosts/simhost-agent.ts': { to: ['src/agent/reconcile-plan.ts'], why: 'a simulated host decides as gpuplane agent does: the agent\'s own pure plan and observe, so both kinds of host share one lifecycle path' },
  'src/emulator/simulated-hosts/simhost-runtime.ts': { to: ['src/agent/container-spec.ts', 'src/agent/runtime.ts'], why: 'the simulated runtime names and lists containers as the agent\'s runtime does (containerName, RuntimeContainer), for the agent\'s plan to read' },
};

module.exports = {
  forbidden: [
    {
      name: 'platform-knows-no-feature',
      comment: 'src/platform/ is the kit every feature uses; it imports nothing of src/ outside itself (features plug in through ports).',
      severity: 'error',
      from: { path: '^src/platform/' },
      // config.ts is the configuration every layer reads (not a feature).
      to: { path: '^src/', pathNot: '^src/platform/|^src/config\\.ts$' },
    },
    {
      name: 'no-feature-imports-emulator',
      comment: 'Features declare ports (faults, emulator hooks); the root wires them to src/emulator/ in emulator mode.',
      severity: 'error',
      from: { path: '^src/', pathNot: `${ROOT}|^src/emulator/|^src/cli/|^src/sdk/` },
      to: { path: '^src/emulator/' },
    },
    {
      name: 'no-feature-imports-root',
      comment: 'The root (app.ts, services.ts, routes.ts, main.ts, database.ts, migrations/) imports features, never the other way.',
      severity: 'error',
      from: { path: '^src/', pathNot: `${ROOT}|^src/cli/` },
      to: { path: ROOT },
    },
    {
      name: 'migrations-import-the-kit-only',
      comment: 'A migration does what it did when databases applied it: it imports the migration kit alone, no feature code (which may change).',
      severity: 'error',
      from: { path: '^src/migrations/' },
      to: { path: '^src/', pathNot: '^src/migrations/|^src/platform/db/migrations\\.ts$' },
    },
    {
      name: 'login-depends-on-tfa-not-back',
      comment: 'Login (password, sessions, the 2FA login step) uses 2FA; 2FA never imports login.',
      severity: 'error',
      from: { path: '^src/tfa/' },
      to: { path: '^src/login/' },
    },
    {
      name: 'agent-imports-protocol-only',
      comment: 'The agent runs on hosts: it imports itself, the SDK and the protocol schema module, never server code.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: { path: '^src/', pathNot: '^src/(agent|sdk)/|^src/protocol/' },
    },
    {
      name: 'sdk-runs-in-a-browser',
      comment: 'The SDK runs in a browser: at run time it imports itself and the server\'s schema and type modules only.',
      severity: 'error',
      from: { path: '^src/sdk/' },
      to: { path: '^src/', pathNot: `^src/sdk/|${SCHEMA_MODULE}`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sdk-types-from-features-only',
      comment: 'The SDK may take a reply type from a feature\'s service (type-only, erased), never from the platform or the root.',
      severity: 'error',
      from: { path: '^src/sdk/' },
      to: { path: `^src/platform/|${ROOT}`, pathNot: SCHEMA_MODULE },
    },
    {
      name: 'schema-modules-stay-small',
      comment: 'Schema and type modules (what the SDK and the agent import) import only other schema and type modules at run time.',
      severity: 'error',
      from: { path: SCHEMA_MODULE },
      to: { path: '^src/', pathNot: SCHEMA_MODULE, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'features-meet-through-public-modules',
      comment: 'A feature imports another only through its public modules: its service, contract, schema, type or constant module.',
      severity: 'error',
      // The CLI, the agent and the SDK are programs and a client library over the API, with their own rules above.
      from: { path: '^src/([^/]+)/', pathNot: ['^src/(cli|agent|sdk)/', ...Object.keys(EXCEPTIONS).map(exact)] },
      to: { path: '^src/([^/]+)/', pathNot: ['^src/$1/', '^src/(platform|protocol)/', PUBLIC_MODULE] },
    },
    // Each file with a listed exception is checked by a rule of its own that allows exactly what is listed for it.
    ...Object.entries(EXCEPTIONS).map(([file, { to, why }]) => ({
      name: 'features-meet-through-public-modules',
      comment: `${file} may also import ${to.join(', ')}: ${why}`,
      severity: 'error',
      from: { path: exact(file).replace(/^\^src\/([^/]+)\//, '^src/($1)/') }, // the feature, captured for $1 below
      to: { path: '^src/([^/]+)/', pathNot: ['^src/$1/', '^src/(platform|protocol)/', PUBLIC_MODULE, ...to.map(exact)] },
    })),
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only ones included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/cli/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
