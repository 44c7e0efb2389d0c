/**
 * The port routes' params, bodies and replies (design "Port access credentials").
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';
import { MAX_RETURN_PATH } from './ports-constants.js';

export const PortParams = Type.Object({
  id: Id({ description: 'The instance id' }),
  // Its upper bound (65535) is the service's check: the route sweeps (mass-assignment) reach the body with any id.
  port: Id({ description: 'The container port, 1-65535 (as in `port_urls`: `8000/tcp` is 8000)' }),
});

export const TokenReply = Type.Object({
  success: Type.Literal(true),
  token: Type.String({ description: 'The port token, shown once (send it as x-gpuplane-port-token); the port\'s previous token stops working' }),
  url: Type.String({ description: 'The port URL with the token (`?gpuplane_token=`): opening it sets the port cookie' }),
});

export const GrantBody = Type.Union([
  Type.Object(
    { path: Type.Optional(Type.String({ maxLength: MAX_RETURN_PATH, description: 'Where on the port to land (a path starting with `/`)' })) },
    { additionalProperties: false },
  ),
  Type.Null(),
]);

export const GrantReply = Type.Object({
  success: Type.Literal(true),
  url: Type.String({ description: 'A one-use link (60 s) on the port\'s host that signs this browser in to the port and goes on to the app' }),
});
