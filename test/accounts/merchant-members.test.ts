import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from '../web/page-client.ts';

describe('who a member sees among the members', () => {
  let w: TestWaybill;
  let tenantId: string;
  let owner: Person;
  const people: Record<string, Person> = {};

  beforeAll(async () => {
    w = await startWaybill();
    const company = await createCompany(w, 'Many Shops');
    tenantId = company.tenantId;
    owner = company.owner;
    const account = async (name: string) =>
      (
        await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
          token: owner.token,
          body: { name },
        })
      ).body.id as string;
    const shopA = await account('Shop A');
    const shopB = await account('Shop B');
    for (const [key, role, accountId] of [
      ['admin', 'admin', null],
      ['viewer', 'viewer', null],
      ['aAdmin', 'merchant_admin', shopA],
      ['aMember', 'merchant_member', shopA],
      ['bMember', 'merchant_member', shopB],
    ] as const) {
      const person = await signUpPerson(w, key);
      const added = await call(w, 'POST', `/v1/companies/${tenantId}/members`, {
        token: owner.token,
        body: { email: person.email, role, ...(accountId ? { customer_account_id: accountId } : {}) },
      });
      expect(added.status).toBe(201);
      people[key] = person;
    }
  });
  afterAll(async () => {
    await w?.close();
  });

  const emailsSeenBy = async (person: Person) => {
    const list = await call(w, 'GET', `/v1/companies/${tenantId}/members?limit=100`, { token: person.token });
    expect(list.status).toBe(200);
    return (list.body.data as Array<{ email: string }>).map((m) => m.email).sort();
  };
  const emailsOf = (...keys: string[]) => keys.map((key) => (people[key] as Person).email).sort();

  it('a company member sees every member', async () => {
    const everyone = [owner.email, ...emailsOf('admin', 'viewer', 'aAdmin', 'aMember', 'bMember')].sort();
    expect(await emailsSeenBy(owner)).toEqual(everyone);
    expect(await emailsSeenBy(people.viewer as Person)).toEqual(everyone);
  });

  it("a merchant member sees only their own account's members, through the API", async () => {
    expect(await emailsSeenBy(people.aAdmin as Person)).toEqual(emailsOf('aAdmin', 'aMember'));
    expect(await emailsSeenBy(people.aMember as Person)).toEqual(emailsOf('aAdmin', 'aMember'));
    expect(await emailsSeenBy(people.bMember as Person)).toEqual(emailsOf('bMember'));
  });

  it('and on the dashboard', async () => {
    const client = await signInInBrowser(w, (people.aMember as Person).email);
    const page = await client.get('/dashboard/members');
    expect(page.status).toBe(200);
    for (const email of emailsOf('aAdmin', 'aMember')) expect(page.text).toContain(email);
    for (const email of [owner.email, ...emailsOf('admin', 'viewer', 'bMember')]) {
      expect(page.text).not.toContain(email);
    }
  });
});
