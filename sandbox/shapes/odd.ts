import { recordId, type RecordData } from '../data/generate';
import type { Collection } from '../data/store';
import type { Sandbox } from '../state';
import { cursorOf, indexOfCursor, pageSizeOf, uuidOf, type Shape } from './common';

/**
 * The odd corners of schemas first contact meets (`sandbox --schema odd`), over the same records:
 *
 * - `bewijzen`: evidence files (Bewijs) keyed by their own `uuid: String!`, beside `maatregelId: ID!` — the control
 *   (maatregel) each belongs to, four files a control. Keyed by the reference, three of every four would be lost.
 * - `waaiers`: records whose nested fields fan out, 400 objects of 400 objects of 400 scalars: a 180 KB
 *   introspection answer whose selection tree has 64 million leaves.
 * - `Leeg`: an object type without fields. graphql-js calls such a schema invalid (and will not serve it), servers
 *   on other stacks do: the sandbox serves it with a placeholder field that its introspection answers leave out.
 * - `maatregelen`: plain controls, with a field of type `Leeg` that no discovered stream can select.
 */
export const FAN_OUT = 400;
/** The field of `Leeg` that introspection never shows (graphql-js needs one to serve the type at all). */
export const HIDDEN_FIELD = { type: 'Leeg', field: '_hidden' } as const;

const fields = (prefix: string, type: string) =>
  Array.from({ length: FAN_OUT }, (_, i) => `${prefix}${i}: ${type}`).join('\n    ');

const typeDefs = /* GraphQL */ `
  extend type Query {
    "Evidence files, keyed by uuid; maatregelId is the control each belongs to."
    bewijzen(first: Int = 50, after: String): BewijsPage!
    "Records whose fields fan out: 400 × 400 × 400."
    waaiers(first: Int = 20, after: String): WaaierPage!
    "Controls."
    maatregelen(first: Int = 50, after: String): MaatregelPage!
    leeg: Leeg
  }
  type PageInfo {
    hasNextPage: Boolean!
    endCursor: String
  }
  type Bewijs {
    maatregelId: ID!
    uuid: String!
    titel: String!
    bytes: Int!
  }
  type BewijsPage {
    nodes: [Bewijs!]!
    pageInfo: PageInfo!
  }
  type Leeg {
    ${HIDDEN_FIELD.field}: Boolean
  }
  type Maatregel {
    id: ID!
    code: String!
    naam: String!
    leeg: Leeg
  }
  type MaatregelPage {
    nodes: [Maatregel!]!
    pageInfo: PageInfo!
  }
  type WaaierBlad {
    ${fields('b', 'Int')}
  }
  type WaaierMidden {
    ${fields('m', 'WaaierBlad')}
  }
  type Waaier {
    id: ID!
    naam: String!
    ${fields('f', 'WaaierMidden')}
  }
  type WaaierPage {
    nodes: [Waaier!]!
    pageInfo: PageInfo!
  }
`;

/** A Relay-style page of `kind` with nodes built by `node`. */
function pageOf(
  c: Collection,
  kind: string,
  a: { first?: number | null; after?: string | null },
  node: (r: RecordData, index: number) => unknown,
) {
  const first = pageSizeOf('first', a.first ?? 50);
  const page = c.page(first, a.after ? indexOfCursor(kind, a.after) : -1);
  return {
    nodes: page.items.map(({ node: r, index }) => node(r, index)),
    pageInfo: {
      hasNextPage: page.hasNextPage,
      endCursor: page.items.length ? cursorOf(kind, page.items.at(-1)!.index) : null,
    },
  };
}

const objectFields = (prefix: string, value: (i: number) => unknown) =>
  Object.fromEntries(Array.from({ length: FAN_OUT }, (_, i) => [`${prefix}${i}`, () => value(i)]));

export const oddShape: Shape = {
  name: 'odd',
  typeDefs,
  connections: ['bewijzen', 'waaiers', 'maatregelen'],
  hiddenFields: [HIDDEN_FIELD],
  resolvers: (sb: Sandbox) => {
    const cols = () => sb.data.collections;
    type Page = { first?: number | null; after?: string | null };
    return {
      Query: {
        bewijzen: (_: unknown, a: Page) =>
          pageOf(cols().evidence, 'evidence', a, (r, index) => ({
            uuid: uuidOf(r.id),
            maatregelId: recordId('controls', Math.floor(index / 4)),
            titel: r.title,
            bytes: r.sizeBytes,
          })),
        waaiers: (_: unknown, a: Page) => pageOf(cols().kpis, 'kpis', a, (r) => ({ id: r.id, naam: r.name })),
        maatregelen: (_: unknown, a: Page) =>
          pageOf(cols().controls, 'controls', a, (r) => ({
            id: r.id,
            code: r.reference,
            naam: r.title,
            leeg: null,
          })),
        leeg: () => null,
      },
      Waaier: objectFields('f', () => ({})),
      WaaierMidden: objectFields('m', () => ({})),
      WaaierBlad: objectFields('b', (i) => i),
    };
  },
};
