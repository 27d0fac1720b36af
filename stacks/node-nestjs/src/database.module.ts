import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';

export const PG_POOL = Symbol('PG_POOL');

// One pg.Pool per process (per cluster worker), sized by PGARENA_POOL_SIZE_PER_WORKER.
@Global()
@Module({
  providers: [
    {
      provide: PG_POOL,
      useFactory: (): Pool => {
        const pool = new Pool({
          connectionString: process.env.PGARENA_DATABASE_URL,
          max: Math.max(1, Number(process.env.PGARENA_POOL_SIZE_PER_WORKER ?? 10)),
        });
        const logger = new Logger('pg.Pool');
        pool.on('error', (err) => logger.error(`idle client error: ${err.message}`));
        return pool;
      },
    },
  ],
  exports: [PG_POOL],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  onApplicationShutdown(): Promise<void> {
    return this.pool.end();
  }
}
