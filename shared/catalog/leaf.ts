import { isEnumType, isNonNullType, isScalarType, type GraphQLField } from 'graphql';

/** A field's type is a scalar or enum, possibly non-null (not a list). */
export function isPlainLeaf(f: GraphQLField<unknown, unknown> | undefined): boolean {
  if (!f) return false;
  const t = isNonNullType(f.type) ? f.type.ofType : f.type;
  return isScalarType(t) || isEnumType(t);
}
