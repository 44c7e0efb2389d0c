/** Schema of `GET /api/v0/gpu_names/unique/`, exported for the SDK (`import type` + `Static<>`). */
import { Type } from 'typebox';

export const GpuNamesReply = Type.Object({ gpu_names: Type.Array(Type.String()) });
