import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { CATEGORIES } from './permissions.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the route's service checks beyond its permission category (e.g. "the team's owner only"), so that the
     * document does not promise the category alone is enough: `x-permission-requires` and the description.
     */
    requires?: string;
  }
}

export const OPENAPI_PATH = '/api/v0/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * The OpenAPI 3.1.0 document, built from the route schemas. Each operation carries its permission category as
 * `x-permission-category` (collected from the route configs), and what it needs beyond it, where anything, as
 * `x-permission-requires`; the document lists the categories.
 */
export async function installOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  const categories = new Map<string, string>();
  const requirements = new Map<string, string>();
  /** Operations a caller without any credential may call too (`keyOptional`: offer search). */
  const keyOptional = new Set<string>();
  app.addHook('onRoute', (route) => {
    const category = route.config?.category;
    if (!category) return;
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    for (const method of [route.method].flat()) {
      categories.set(`${method.toLowerCase()} ${path}`, category);
      if (route.config?.requires) requirements.set(`${method.toLowerCase()} ${path}`, route.config.requires);
      if (route.config?.keyOptional) keyOptional.add(`${method.toLowerCase()} ${path}`);
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'gpuplane API',
        version: '1.0.0',
        description:
          'GPU cloud control plane: offers, instances, templates, charges, volumes, serverless endpoints, teams, ' +
          'API keys and two-factor authentication. Authenticate with `Authorization: Bearer <api key>`.',
      },
      servers: [{ url: publicUrl }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, any> }).openapiObject;
      for (const [path, item] of Object.entries<Record<string, any>>(doc.paths ?? {})) {
        for (const [method, op] of Object.entries<Record<string, any>>(item)) {
          const category = categories.get(`${method} ${path}`);
          if (!category) continue;
          op['x-permission-category'] = category;
          const requires = requirements.get(`${method} ${path}`);
          if (requires) {
            op['x-permission-requires'] = requires;
            // Readers of the rendered page (/docs) see the description, not the extension.
            const note = `Needs more than the ${category} permission: ${requires}.`;
            op.description = op.description ? `${op.description}\n\n${note}` : note;
          }
          // An empty requirement beside the bearer one is OpenAPI's "or no credential at all".
          if (category !== 'public') op.security = keyOptional.has(`${method} ${path}`) ? [{ bearerAuth: [] }, {}] : [{ bearerAuth: [] }];
        }
      }
      doc['x-permission-categories'] = [...CATEGORIES];
      return doc as any;
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PATH, uiConfig: { docExpansion: 'list', deepLinking: true } });
}
