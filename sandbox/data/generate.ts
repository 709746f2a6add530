/**
 * Deterministic tenant data: a record is a pure function of (seed, kind, index, version), so a million
 * records per kind cost no memory until a page asks for them.
 */

export const KINDS = ['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users'] as const;
export type Kind = (typeof KINDS)[number];

export const ID_PREFIX: Record<Kind, string> = {
  controls: 'ctl',
  evidence: 'evd',
  personnel: 'per',
  kpis: 'kpi',
  reports: 'rpt',
  users: 'usr',
};

export type RecordData = Record<string, unknown> & { id: string };

export const recordId = (kind: Kind, index: number) =>
  `${ID_PREFIX[kind]}-${String(index + 1).padStart(7, '0')}`;

export function indexOfId(kind: Kind, id: string): number | undefined {
  const m = new RegExp(`^${ID_PREFIX[kind]}-(\\d{7,})$`).exec(id);
  return m ? Number(m[1]) - 1 : undefined;
}

/** FNV-1a, then mulberry32: small, fast and stable across Node versions. */
function rng(key: string): () => number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = [
  'Anna',
  'Bram',
  'Carla',
  'Daan',
  'Eva',
  'Finn',
  'Gijs',
  'Hanna',
  'Iris',
  'Jesse',
  'Lotte',
  'Milan',
  'Noor',
  'Sem',
  'Tess',
  'Yara',
];
const LAST = [
  'de Vries',
  'Jansen',
  'Bakker',
  'Visser',
  'Smit',
  'Meijer',
  'de Boer',
  'Mulder',
  'Bos',
  'Vos',
  'Peters',
  'Hendriks',
];
const DEPARTMENTS = ['Finance', 'IT', 'HR', 'Legal', 'Operations', 'Sales', 'Security'];
const FRAMEWORKS = ['ISO 27001:2022', 'NEN 7510', 'BIO', 'SOC 2'];
const CONTROL_TOPICS = [
  'Access control',
  'Asset inventory',
  'Backup',
  'Cryptography',
  'Incident response',
  'Logging',
  'Supplier management',
  'Awareness training',
  'Change management',
  'Vulnerability management',
];
const CONTROL_STATUS = ['implemented', 'partially_implemented', 'not_implemented', 'not_applicable'];
const KPI_NAMES = [
  'Patch latency',
  'Phishing click rate',
  'Open incidents',
  'Training completion',
  'Backup success rate',
  'Access reviews done',
];
const REPORT_TYPES = ['management_review', 'internal_audit', 'risk_assessment', 'statement_of_applicability'];
const REPORT_STATUS = ['draft', 'in_review', 'final'];
const USER_ROLES = ['Super User', 'Member', 'Auditor', 'Read-only'];
const MIME = [
  ['pdf', 'application/pdf'],
  ['docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['png', 'image/png'],
  ['xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
];

const EPOCH = Date.UTC(2025, 0, 1);
const DAY = 86_400_000;

export function generate(seed: string, kind: Kind, index: number, version: number): RecordData {
  const r = rng(`${seed}|${kind}|${index}|${version}`);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const date = (days: number) => new Date(EPOCH + Math.floor(r() * days) * DAY).toISOString().slice(0, 10);
  const stamp = () => new Date(EPOCH + Math.floor(r() * 600 * DAY) + int(0, DAY - 1)).toISOString();
  const person = () => {
    const first = pick(FIRST);
    const last = pick(LAST);
    return {
      first,
      last,
      name: `${first} ${last}`,
      email: `${first}.${last.replace(/ /g, '')}${int(1, 99)}@example.org`.toLowerCase(),
    };
  };
  const id = recordId(kind, index);
  // One person is one person everywhere: a control's owner is the user its id names, an employee the user of the
  // same number (as first created) — so personal data hashed alike can be joined across streams.
  const user = (i: number) => generate(seed, 'users', i, 0) as unknown as { name: string; email: string };
  const owner = (i: number) => {
    const { name, email } = user(i);
    return { id: recordId('users', i), name, email };
  };
  switch (kind) {
    case 'controls': {
      person(); // drawn as before, so every other field keeps its value
      const n = index + 1;
      return {
        id,
        reference: `A.${(n % 8) + 5}.${n}`,
        title: `${pick(CONTROL_TOPICS)} ${n}`,
        description: `Measures for ${pick(CONTROL_TOPICS).toLowerCase()} (revision ${version + 1}).`,
        framework: pick(FRAMEWORKS),
        status: pick(CONTROL_STATUS),
        owner: owner(int(0, 999)),
        tags: [pick(DEPARTMENTS).toLowerCase(), pick(['core', 'annual', 'quarterly'])],
        updatedAt: stamp(),
      };
    }
    case 'evidence': {
      const [ext, mimeType] = pick(MIME);
      return {
        id,
        title: `Evidence ${index + 1}: ${pick(CONTROL_TOPICS)}`,
        controlId: recordId('controls', int(0, 999)),
        fileName: `evidence-${index + 1}-v${version + 1}.${ext}`,
        mimeType,
        sizeBytes: int(2_000, 5_000_000),
        uploadedAt: stamp(),
        uploadedBy: { id: recordId('users', int(0, 999)), name: person().name },
      };
    }
    case 'personnel': {
      person(); // drawn as before, so every other field keeps its value
      const u = user(index);
      const space = u.name.indexOf(' ');
      return {
        id,
        employeeNumber: `E${String(index + 1).padStart(6, '0')}`,
        firstName: u.name.slice(0, space),
        lastName: u.name.slice(space + 1),
        email: u.email,
        department: pick(DEPARTMENTS),
        jobTitle: pick(['Analyst', 'Engineer', 'Manager', 'Officer', 'Consultant']),
        startDate: date(3650),
        screening: { status: pick(['valid', 'pending', 'expired']), date: date(700) },
      };
    }
    case 'kpis': {
      const target = int(50, 100);
      return {
        id,
        name: `${pick(KPI_NAMES)} #${index + 1}`,
        unit: pick(['%', 'days', 'count']),
        target,
        value: Math.round(r() * target * 1.2 * 10) / 10,
        period: `2026-Q${int(1, 4)}`,
        trend: pick(['up', 'down', 'flat']),
      };
    }
    case 'reports':
      return {
        id,
        title: `${pick(REPORT_TYPES).replace(/_/g, ' ')} ${index + 1}`,
        type: pick(REPORT_TYPES),
        status: pick(REPORT_STATUS),
        period: `2026-${String(int(1, 12)).padStart(2, '0')}`,
        createdAt: stamp(),
        author: { id: recordId('users', int(0, 999)), name: person().name },
      };
    case 'users': {
      const p = person();
      return {
        id,
        name: p.name,
        email: p.email,
        role: pick(USER_ROLES),
        active: r() > 0.1,
        lastLoginAt: stamp(),
      };
    }
  }
}
