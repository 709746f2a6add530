/**
 * Which fields of a record hold personal data, found by their names where they stand (docs/personal-data.md): an
 * e-mail address, a phone number, a person's names, a postal address, a date of birth, a national, tax or employee
 * number, a bank account or card, an IP address. A bare `name` (or `displayName`, `username`) is a person's only in
 * a person's record: one whose type, field or stream names a person (`owner`, `uploadedBy`, `users`, `staff`) or that
 * also holds an e-mail address — a control's `name` is not. Found fields are marked, never guessed away: the
 * operator keeps a false one with `"keep"` in the streams file.
 */

/** What kind of personal data a field holds, in words for people (the discover output, the docs). */
export type PersonalKind =
  | 'e-mail address'
  | 'phone number'
  | 'name'
  | 'postal address'
  | 'date of birth'
  | 'national or tax number'
  | 'employee number'
  | 'bank account or card'
  | 'IP address';

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/** By the field's own name, wherever it stands (normalised: lower case, no `_` or `-`). */
const ALWAYS: Array<[RegExp, PersonalKind]> = [
  [
    /^(e?mail|emailaddress|mailaddress|(work|personal|private|contact|primary|secondary|business|home)e?mail(address)?|e?mailaddr)(es|s)?$/,
    'e-mail address',
  ],
  [
    /^(work|home|mobile|cell|office|business|contact|primary|private|personal)?(phone|telephone|mobile|cellphone|msisdn|fax)(number|no)?s?$/,
    'phone number',
  ],
  [/^(first|last|given|family|middle|maiden|full|legal|sur)name$|^surname$|^forename$/, 'name'],
  [
    /^(street(address|name)?|addressline\d?|address[12]|homeaddress|postaladdress|postalcode|postcode|zipcode|zip)$/,
    'postal address',
  ],
  [/^(dob|dateofbirth|birthdate|birthday|birthdt|bornon)$/, 'date of birth'],
  [
    /^(ssn|socialsecuritynumber|nationalid|nationalidnumber|nationalinsurancenumber|nino|passportnumber|passportno|taxid|taxnumber|taxidentificationnumber|personnummer|bsn|idcardnumber|driverslicense|driverslicensenumber)$/,
    'national or tax number',
  ],
  [/^(employee|staff|personnel|payroll|badge)(number|no|id|code)$/, 'employee number'],
  [
    /^(iban|bankaccount|bankaccountnumber|accountholder|creditcard|creditcardnumber|cardnumber|pan)$/,
    'bank account or card',
  ],
  [/^(ip|ipaddress|ipv4|ipv6|lastloginip|remoteaddr|remoteaddress|clientip)$/, 'IP address'],
];

/** A bare name: a person's in a person's record only. */
const BARE_NAME = /^(name|displayname|username|login|nickname|preferredname)$/;

/** Words that make a record a person's: its type, the field holding it, or its stream. */
const PERSON =
  /(user|person|people|personnel|staff|employee|member|contact|customer|owner|author|assignee|reporter|approver|reviewer|manager|uploadedby|createdby|updatedby|modifiedby|requestedby|submittedby|account|profile|patient|student|applicant|candidate|worker|participant|attendee|recipient|sender)s?$/;

/** The kind a custom scalar's name says (graphql-scalars' `EmailAddress`, `PhoneNumber`, `IPv4`, `IBAN`…). */
const SCALARS: Array<[RegExp, PersonalKind]> = [
  [/^e?mail(address)?$/, 'e-mail address'],
  [/^phone(number)?$/, 'phone number'],
  [/^(postalcode|zipcode)$/, 'postal address'],
  [/^(ip|ipv4|ipv6|ipaddress)$/, 'IP address'],
  [/^iban$/, 'bank account or card'],
];

export interface PersonalField {
  /** Dotted, from the record. */
  field: string;
  kind: PersonalKind;
}

/**
 * The personal fields among a record's leaves (dotted from the record). `record` names the record for the bare-name
 * rule (its stream or type name); `scalarOf` gives a leaf's scalar type name where the schema is known.
 */
export function personalFields(
  leaves: string[],
  record: string[],
  options: { scalarOf?: (field: string) => string | undefined; except?: string[] } = {},
): PersonalField[] {
  const except = new Set(options.except ?? []);
  const out: PersonalField[] = [];
  const kindOf = (leaf: string): PersonalKind | undefined => {
    const name = norm(leaf.split('.').pop() ?? '');
    const scalar = norm(options.scalarOf?.(leaf) ?? '');
    for (const [re, kind] of SCALARS) if (scalar && re.test(scalar)) return kind;
    for (const [re, kind] of ALWAYS) if (re.test(name)) return kind;
    return undefined;
  };
  const found = new Map(leaves.map((l) => [l, kindOf(l)]));
  for (const leaf of leaves) {
    if (except.has(leaf)) continue;
    let kind = found.get(leaf);
    const parts = leaf.split('.');
    if (!kind && BARE_NAME.test(norm(parts[parts.length - 1]))) {
      const holder = parts.length > 1 ? [parts[parts.length - 2]] : record;
      const prefix = parts.slice(0, -1).join('.');
      const siblingMail = leaves.some(
        (l) => found.get(l) === 'e-mail address' && l.split('.').slice(0, -1).join('.') === prefix,
      );
      if (siblingMail || holder.some((h) => PERSON.test(norm(h)))) kind = 'name';
    }
    if (kind) out.push({ field: leaf, kind });
  }
  return out;
}
