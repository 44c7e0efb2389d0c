import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { UsersService } from './users-service.js';
import { CurrentUserReply } from './users-types.js';

export async function usersRoutes(app: TypedApp, { users }: { users: UsersService }): Promise<void> {
  app.get(
    '/api/v0/users/current/',
    {
      config: { category: 'user_read' },
      schema: {
        summary: 'Show the current user',
        tags: ['users'],
        response: { 200: CurrentUserReply, 401: ErrorReply, 403: ErrorReply },
      },
    },
    async (request) => users.current(principalOf(request)),
  );
}
