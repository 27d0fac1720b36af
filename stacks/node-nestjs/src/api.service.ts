import { Inject, Injectable, InternalServerErrorException } from '@nestjs/common';
import { Pool } from 'pg';
import { PG_POOL } from './database.module';
import {
  PerfLargePayloadQuery,
  PerfManyParamsQuery,
  PerfNestedQuery,
  PerfPostBody,
  PerfTestQuery,
  TxBody,
} from './dto';

const USERS_SQL =
  'SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1';

const PERF_PARAMS = [
  '_records', '_text', '_int', '_bigint', '_numeric', '_real', '_double', '_bool', '_date',
  '_timestamp', '_timestamptz', '_uuid', '_json', '_jsonb', '_int_array', '_text_array',
] as const satisfies readonly (keyof PerfTestQuery)[];
const PERF_SQL = `SELECT * FROM perf_test(${PERF_PARAMS.map((_, i) => `$${i + 1}`).join(', ')})`;

// seed 000's newer scenarios (scenarios.sql): no table access, so what differs is the framework's work
const MINIMAL_SQL = 'SELECT * FROM perf_minimal()';
const POST_SQL = 'SELECT * FROM perf_post($1, $2)';
const NESTED_SQL = 'SELECT * FROM perf_nested($1, $2)';
const LARGE_PAYLOAD_SQL = 'SELECT * FROM perf_large_payload($1)';
const MANY_PARAMS = Array.from({ length: 20 }, (_, i) => `_p${i + 1}` as keyof PerfManyParamsQuery);
const MANY_PARAMS_SQL = `SELECT * FROM perf_many_params(${MANY_PARAMS.map((_, i) => `$${i + 1}`).join(', ')})`;

// pgbench's TPC-B transaction (seed 001)
const TX_UPDATE_ACCOUNT = 'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2';
const TX_SELECT_BALANCE = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1';
const TX_UPDATE_TELLER = 'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2';
const TX_UPDATE_BRANCH = 'UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2';
const TX_INSERT_HISTORY =
  'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)';

@Injectable()
export class ApiService {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async users(limit: number) {
    const { rows } = await this.pool.query(USERS_SQL, [limit]);
    return rows;
  }

  async perfTest(query: PerfTestQuery) {
    const { rows } = await this.pool.query(PERF_SQL, PERF_PARAMS.map((name) => query[name]));
    return rows;
  }

  async perfMinimal() {
    const { rows } = await this.pool.query(MINIMAL_SQL);
    return rows;
  }

  // the parsed payload goes back to JSON text, bound to the function's jsonb parameter
  async perfPost({ _records, _payload }: PerfPostBody) {
    const { rows } = await this.pool.query(POST_SQL, [_records, JSON.stringify(_payload)]);
    return rows;
  }

  async perfNested({ _records, _depth }: PerfNestedQuery) {
    const { rows } = await this.pool.query(NESTED_SQL, [_records, _depth]);
    return rows;
  }

  async perfLargePayload({ _size_kb }: PerfLargePayloadQuery) {
    const { rows } = await this.pool.query(LARGE_PAYLOAD_SQL, [_size_kb]);
    return rows;
  }

  // bound untyped as text (absent -> NULL); PostgreSQL casts them, a value it rejects is SQLSTATE
  // 22P02/22003 -> 400 in the filter
  async perfManyParams(query: PerfManyParamsQuery) {
    const { rows } = await this.pool.query(MANY_PARAMS_SQL, MANY_PARAMS.map((name) => query[name] ?? null));
    return rows;
  }

  async tx({ aid, tid, bid, delta }: TxBody): Promise<{ abalance: number }> {
    const client = await this.pool.connect();
    // While checked out, pg-pool no longer listens for the client's 'error' event: if the
    // connection dies mid-transaction this listener keeps the event from crashing the worker
    // (the pending query rejects) and marks the client for destruction on release.
    let broken: Error | undefined;
    const onClientError = (err: Error) => {
      broken = err;
    };
    client.on('error', onClientError);
    try {
      await client.query('BEGIN');
      await client.query(TX_UPDATE_ACCOUNT, [delta, aid]);
      const { rows } = await client.query<{ abalance: number }>(TX_SELECT_BALANCE, [aid]);
      if (rows.length !== 1) throw new InternalServerErrorException(`pgbench_accounts has no row aid=${aid}`);
      await client.query(TX_UPDATE_TELLER, [delta, tid]);
      await client.query(TX_UPDATE_BRANCH, [delta, bid]);
      await client.query(TX_INSERT_HISTORY, [tid, bid, aid, delta]);
      await client.query('COMMIT');
      return { abalance: rows[0].abalance };
    } catch (err) {
      if (!broken) {
        await client.query('ROLLBACK').catch((rollbackErr: Error) => {
          broken = rollbackErr;
        });
      }
      throw err;
    } finally {
      client.removeListener('error', onClientError);
      client.release(broken);
    }
  }
}
