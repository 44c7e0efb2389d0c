/**
 * Route schemas compiled on first use instead of at start-up.
 *
 * Fastify compiles every route's validators (Ajv) and serializers (fast-json-stringify) before it listens; with every
 * feature's routes that takes more than a second, most of the start-up budget. Here each schema is compiled the first
 * time a request needs it, by exactly the compilers Fastify would use (with the same options), and `compileAll()` compiles the rest in the background after listening, so a broken schema is
 * still reported at start (in the log) and by the tests, not first by a user.
 */
import type { FastifyServerOptions } from 'fastify';
// Fastify's own compilers (its dependencies, not declared in package.json: whatever version Fastify installs).
import AjvCompilerModule from '@fastify/ajv-compiler';
import SerializerModule from '@fastify/fast-json-stringify-compiler';
import { strictValidators, type ValidatorFactory } from './validation.js';

type Compiled = ((data: unknown) => unknown) & { errors?: unknown };
type Compile = (route: Record<string, unknown>) => Compiled;
type Factory = (externalSchemas: unknown, options: unknown) => Compile;

const AjvCompiler = AjvCompilerModule as unknown as () => Factory;
const SerializerSelector = SerializerModule as unknown as () => Factory;

export interface LazySchemas {
  schemaController: NonNullable<FastifyServerOptions['schemaController']>;
  /** Compiles every schema not compiled yet, yielding to requests between schemas; throws the first failure. */
  compileAll(): Promise<void>;
}

export function lazySchemas(): LazySchemas {
  const pending = new Set<() => void>();

  const lazy = (compile: Compile): Compile => (route) => {
    let fn: Compiled | undefined;
    const force = () => {
      fn ??= compile(route);
      pending.delete(force);
      return fn;
    };
    pending.add(force);
    const run: Compiled = (data) => {
      const f = fn ?? force();
      const result = f(data);
      // Fastify reads a failed validation's errors from the function it was given.
      run.errors = f.errors;
      return result;
    };
    return run;
  };

  // Ajv behind the strict coercion and the reserved-key guard of validation.ts.
  const validators = strictValidators(AjvCompiler() as unknown as ValidatorFactory) as unknown as Factory;
  const serializers = SerializerSelector();
  return {
    schemaController: {
      compilersFactory: {
        buildValidator: ((externalSchemas: unknown, options: unknown) => lazy(validators(externalSchemas, options))) as any,
        buildSerializer: ((externalSchemas: unknown, options: unknown) => lazy(serializers(externalSchemas, options))) as any,
      },
    },
    async compileAll() {
      for (const force of [...pending]) {
        force();
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}
