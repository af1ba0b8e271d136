import { expect } from 'chai';
import { loadConfig } from '../../config';
import { banner } from '../../core/banner';

describe('core: the start banner', () => {
  it('says the address it listens on first, and with PUBLIC_URL set the public one beside it, whose links follow', () => {
    const text = banner('http://127.0.0.1:3000', 'https://pricing.example.com', loadConfig({}), ['health', 'identity']);
    const lines = text.split('\n');
    expect(lines[0]).to.equal('Pricing compute service listening on http://127.0.0.1:3000');
    expect(lines[1]).to.equal('  public URL: https://pricing.example.com (PUBLIC_URL; links in answers use it)');
    expect(text).to.contain('health:    https://pricing.example.com/healthz');
    expect(text).to.contain('curl -s -X POST https://pricing.example.com/api/agents/register');
  });

  it('has no public URL line when the public URL is the address it listens on', () => {
    const text = banner('http://127.0.0.1:3000', 'http://127.0.0.1:3000', loadConfig({}), ['health']);
    expect(text).to.not.contain('public URL');
    expect(text).to.not.contain('get a key');
    expect(text).to.contain('embedded PostgreSQL in ./data; store: in process');
  });

  it('offers the sign-up route instead of self-registration when SELF_REGISTRATION_OPEN is false, and no health line without the health plugin', () => {
    const text = banner('http://127.0.0.1:3000', 'http://127.0.0.1:3000', loadConfig({ SELF_REGISTRATION_OPEN: 'false' }), ['identity', 'accounts']);
    expect(text).to.not.contain('/api/agents/register');
    expect(text).to.contain('get a key: sign up (POST http://127.0.0.1:3000/api/auth/signup), then POST http://127.0.0.1:3000/api/api-keys');
    expect(text).to.not.contain('/healthz');
  });

  it('on Linux, asks for MALLOC_MMAP_THRESHOLD_ when the service was started without it (not through npm start); silent with it, and elsewhere', () => {
    const config = loadConfig({});
    expect(banner('http://127.0.0.1:3000', 'http://127.0.0.1:3000', config, [], {}, 'linux')).to.contain('memory:    set MALLOC_MMAP_THRESHOLD_=131072 in the environment, as npm start does');
    expect(banner('http://127.0.0.1:3000', 'http://127.0.0.1:3000', config, [], { MALLOC_MMAP_THRESHOLD_: '131072' }, 'linux')).to.not.contain('MALLOC');
    expect(banner('http://127.0.0.1:3000', 'http://127.0.0.1:3000', config, [], {}, 'darwin')).to.not.contain('MALLOC');
  });
});
