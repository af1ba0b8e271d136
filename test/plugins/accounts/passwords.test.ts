import { randomBytes, scryptSync } from 'node:crypto';
import { expect } from 'chai';
import { hashPassword, verifyPassword } from '../../../plugins/accounts/services/passwords';

/** A hash as the service made it before passwords were normalised: scrypt of the password exactly as sent. */
function hashAsSent(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 });
  return `scrypt$16384$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

describe('accounts: password hashes', () => {
  const composed = 'p\u00e4ssw\u00f6rd123';
  const decomposed = 'pa\u0308sswo\u0308rd123';

  it('hashes in Unicode NFC: the composed and the decomposed form verify alike', async () => {
    for (const made of [composed, decomposed]) {
      const stored = await hashPassword(made);
      expect(await verifyPassword(composed, stored)).to.equal(true);
      expect(await verifyPassword(decomposed, stored)).to.equal(true);
      expect(await verifyPassword('p\u00e4ssw\u00f6rd124', stored)).to.equal(false);
    }
  });

  it('still verifies a hash made before normalisation from a decomposed password, typed as it was', async () => {
    const stored = hashAsSent(decomposed);
    expect(await verifyPassword(decomposed, stored)).to.equal(true);
    expect(await verifyPassword('pa\u0308sswo\u0308rd124', stored)).to.equal(false);
  });
});
