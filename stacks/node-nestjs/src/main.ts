import 'reflect-metadata';
import cluster from 'node:cluster';
import { ValidationPipe } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { ErrorFilter } from './error.filter';

const HOST = process.env.PGARENA_HOST ?? '127.0.0.1';
const PORT = Number(process.env.PGARENA_PORT ?? 8080);
const WORKERS = Math.max(1, Number(process.env.PGARENA_WORKERS ?? 1));
const POOL_SIZE = Math.max(1, Number(process.env.PGARENA_POOL_SIZE_PER_WORKER ?? 10));

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule, {
    logger: ['error', 'warn'],
    // on close, destroy idle keep-alive sockets instead of waiting for clients to hang up
    forceCloseConnections: true,
  });
  app.setGlobalPrefix('api');
  app.useGlobalPipes(new ValidationPipe({ transform: true, stopAtFirstError: true }));
  app.useGlobalFilters(new ErrorFilter(app.get(HttpAdapterHost)));
  // SIGTERM/SIGINT -> app.close(): HTTP server closed, pool.end() (DatabaseModule), then exit
  app.enableShutdownHooks();
  await app.listen(PORT, HOST);
  if (WORKERS === 1) console.log(`pid ${process.pid}: pool ${POOL_SIZE}, http://${HOST}:${PORT}`);
}

function runPrimary(): void {
  let stopping = false;
  const listening = new Set<number>();
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit();
    setTimeout(() => process.exit(), 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  cluster.on('listening', (worker) => listening.add(worker.id));
  // Each worker's share of PGARENA_POOL_SIZE (PGARENA_POOL_SIZES, e.g. "4,3,3": the remainder goes to the
  // first workers, so the shares add up to the total); a worker forked to replace a dead one keeps its share.
  const sizes: number[] = (process.env.PGARENA_POOL_SIZES || '').split(',').filter(Boolean).map(Number);
  const shares = new Map<number, number>();
  const forkWorker = (size: number) => {
    const worker = cluster.fork({ PGARENA_POOL_SIZE_PER_WORKER: String(size) });
    shares.set(worker.id, size);
  };
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit();
    } else if (!listening.has(worker.id)) {
      // failed during start-up: stop everything instead of crash-looping
      console.error(`worker ${worker.process.pid} failed to start (${signal ?? code})`);
      process.exitCode = 1;
      stop();
    } else {
      console.error(`worker ${worker.process.pid} died (${signal ?? code}), forking a new one`);
      forkWorker(shares.get(worker.id) ?? POOL_SIZE);
    }
  });

  for (let i = 0; i < WORKERS; i++) forkWorker(sizes[i] ?? POOL_SIZE);
  console.log(`primary ${process.pid}: ${WORKERS} workers, pools ${sizes.join('+') || POOL_SIZE + ' each'}, http://${HOST}:${PORT}`);
}

if (WORKERS > 1 && cluster.isPrimary) {
  runPrimary();
} else {
  bootstrap().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
