import type { Request } from 'express';
import type { z } from 'zod';
import type { Principal } from '../../../core/auth';
import type { RequestRate } from '../../identity';
import type { ToolDescriptor } from '../../discovery';

export interface ToolContext {
  principal: Principal | null;
  req: Request;
  requestId: string;
  clientIp: string;
  /** The request-rate counts of the MCP request (a keyed call), for the sandbox's `remaining`. */
  rateLimit: RequestRate | undefined;
  /** Reports progress when the caller asked for it (a progress token); a no-op otherwise. */
  progress: (progress: number, total: number, message: string) => void;
  /** performance.now() when the MCP request arrived: the compute trace's authenticate_and_validate stage runs from it. */
  startedAt?: number;
  /** The call's `_meta.idempotency_key`, when it sent one (checked by the tool that takes it). */
  idempotencyKey?: unknown;
  /** A keyless call: its address's demo budget once admitted (set by admitToolCall), reported as REST's demo reports it. */
  demoBudget?: { limit_per_hour: number; remaining: number; resets_at: string };
}

/** One MCP tool: its published description, its input schema (shared with REST), its admission and its work. */
export interface McpTool {
  descriptor: ToolDescriptor;
  input: z.ZodType;
  /** Arguments that pass `input`, returned with validation failures (as REST returns its example body). */
  example?: unknown;
  /** The example made from the arguments sent (what was refused left out), as the REST route makes its body's; used when it passes `input`. */
  exampleFor?: (sent: unknown) => unknown;
  /**
   * The REST routes (ids) it does the same as, for a caller with a credential and for one without: a next step in a
   * tool result that names one is given this tool's name (services/step-tools.ts).
   */
  twin?: { keyed: string; keyless: string };
  /** Who may call it (credential scopes, or the demo budget without a key); runs before the arguments are validated. */
  admit?(ctx: ToolContext): Promise<void>;
  run(args: unknown, ctx: ToolContext): Promise<Record<string, unknown>>;
}
