import type { SecurityCase } from '../support/security';

const observation = () => ({ product_type: 'security-widget', currency: 'USD', amount: '9.99', observed_at: new Date(Date.now() - 3_600_000).toISOString(), source: 'security-suite' });

/** Security suites of the verification plugin's authenticated routes. */
export const verificationSecurityCases: Record<string, SecurityCase> = {
  'verify.price': { as: 'key', request: () => ({ path: '/api/price-router/verify', body: { context: { product_type: 'security-widget', currency: 'USD' }, proposed_price: '9.99' } }) },
  'observations.create': { as: 'key', request: () => ({ path: '/api/data/observations', body: { observations: [observation()] } }) },
  'observations.list': { as: 'key', request: () => ({ path: '/api/data/observations?product_type=security-widget' }) },
};
