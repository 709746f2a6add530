// The launcher lives with the tools: bench/sync starts one too.
export {
  startPostgraphileTenant,
  TENANT_ROWS,
  type PostgraphileTenant,
} from '../../tools/postgraphile-tenant';
