/**
 * Entry of the `gpuplane` binary. `serve` starts the server (contract §1); every other command is a client. The
 * server's modules load only for `serve`, so client commands start fast.
 */
const USAGE_SERVE = 'serve';

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === USAGE_SERVE) {
    const { serve } = await import('./serve.js');
    return serve(rest);
  }
  if (command === 'admin') {
    const { admin } = await import('./admin.js');
    process.exitCode = await admin(rest);
    return;
  }
  // A reader that stops early (`gpuplane … --help | head`) closes the pipe: stop quietly, as Unix tools do.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(0);
  });
  const { runCli } = await import('./program.js');
  process.exitCode = await runCli(argv);
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`gpuplane: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
