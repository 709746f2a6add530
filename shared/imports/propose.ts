import { getNamedType, isLeafType, isObjectType, type GraphQLSchema } from 'graphql';

/**
 * The tenant's mutations as import operations (the IMPORT_OPERATIONS_FILE format): each root mutation field with
 * every argument as a variable of the schema's own type, selecting the result's `id` when it has one. A proposal:
 * which of them an import may run is the operator's choice — the file is the allow-list.
 */
export function proposeOperations(schema: GraphQLSchema): Record<string, string> {
  const mutation = schema.getMutationType();
  if (!mutation) return {};
  const out: Record<string, string> = {};
  for (const field of Object.values(mutation.getFields())) {
    const variables = field.args.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
    const args = field.args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const result = getNamedType(field.type);
    const selection = isLeafType(result)
      ? ''
      : isObjectType(result) && result.getFields().id
        ? ' { id }'
        : ' { __typename }';
    const name = field.name.charAt(0).toUpperCase() + field.name.slice(1);
    out[field.name] =
      `mutation ${name}${variables ? `(${variables})` : ''} { ${field.name}${args ? `(${args})` : ''}${selection} }`;
  }
  return out;
}
