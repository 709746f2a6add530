// The launcher lives with the tools: bench/postgres starts one too.
export { postgresBin, startPostgres, type Postgres } from '../../tools/postgres-server';
