import { createHash, timingSafeEqual } from 'node:crypto';

export type Role = 'Super User' | 'Member';

export interface Person {
  id: string;
  username: string;
  name: string;
  email: string;
  role: Role;
}

/**
 * The seeded people who can log in on the device page and the portal. Sandbox-only, documented in the
 * docs/sandbox.md; nothing here is a real credential.
 */
export const SEEDED_PEOPLE: ReadonlyArray<Person & { password: string }> = [
  {
    id: 'b7a4c1e0-0001-4000-8000-000000000001',
    username: 'admin',
    password: 'sandbox-admin',
    name: 'Ada Admin',
    email: 'ada.admin@example.org',
    role: 'Super User',
  },
  {
    id: 'b7a4c1e0-0002-4000-8000-000000000002',
    username: 'member',
    password: 'sandbox-member',
    name: 'Max Member',
    email: 'max.member@example.org',
    role: 'Member',
  },
];

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function findPerson(username: string): Person | undefined {
  const p = SEEDED_PEOPLE.find((x) => x.username === username);
  if (!p) return undefined;
  const { password: _password, ...person } = p;
  return person;
}

export function personById(id: string): Person | undefined {
  const p = SEEDED_PEOPLE.find((x) => x.id === id);
  return p && findPerson(p.username);
}

/** Checks a username and password in constant time per comparison. */
export function authenticatePerson(username: string, password: string): Person | undefined {
  const p = SEEDED_PEOPLE.find((x) => x.username === username);
  if (!p) return undefined;
  return timingSafeEqual(digest(p.password), digest(password)) ? findPerson(username) : undefined;
}
