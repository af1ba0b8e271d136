import { expect } from 'chai';
import { inexactNumbers } from '../../core/http/json-numbers';

describe('core: JSON numbers whose text a double does not hold', () => {
  it('finds them at the paths asked for, by their place in objects and arrays, and leaves numbers that arrive as sent', () => {
    const text = '{"a": 20.123456789012345, "b": {"c": [1, 9007199254740993]}, "d": 0.30000000000000004, "e": "20.123456789012345", "f": 20.123456789012345}';
    expect(inexactNumbers(text, ['a', 'b.c.1', 'd', 'e'])).to.deep.equal([
      { path: 'a', sent: '20.123456789012345', read: '20.123456789012344' },
      { path: 'b.c.1', sent: '9007199254740993', read: '9007199254740992' },
    ]);
    // Not asked for: not looked at.
    expect(inexactNumbers(text, ['b.c.0'])).to.deep.equal([]);
  });

  it('reads keys and strings as JSON does (escapes, digits inside strings), and a repeated key by its last value', () => {
    const text = '{"x\\"y": "1234567890.1234567890 \\" [", "k\\u0065y": 1.00000000000000001, "z": 1.00000000000000001, "z": 2}';
    expect(inexactNumbers(text, ['key', 'z', 'x"y'])).to.deep.equal([{ path: 'key', sent: '1.00000000000000001', read: '1' }]);
  });

  it('costs no scan when no number could have lost digits (no run of 16 digits or points)', () => {
    expect(inexactNumbers('{"a": 0.1, "b": 123456789012345}', ['a', 'b'])).to.deep.equal([]);
    expect(inexactNumbers('{"a": 1e400}', ['a'])).to.deep.equal([]);
  });
});
