/** GET /v1/models and GET /v1/models/{id}, and the check that a request names the served model. */
import type { ServerResponse } from 'node:http';
import { toApiModelInfo, type ServedModelInfo } from '@afd/shared';
import { ApiError } from './ApiError.js';
import { sendJson } from './httpUtil.js';

export interface ServedModel {
  /** Name clients pass as `model`: the model's id. */
  servedModelName: string;
  /** Model directory (also accepted as `model`, never shown). */
  modelPath: string;
  /** Longest prompt + output of one request. */
  maxModelLen: number;
  /** Name, parameters, description and example prompts (field `afd`). */
  modelInfo?: ServedModelInfo | undefined;
}

/** OpenAI's 404 for a model this server does not serve. */
function modelNotFound(model: string, servedModelName: string): ApiError {
  return new ApiError(404, 'invalid_request_error', `The model \`${model}\` does not exist. This server serves \`${servedModelName}\` (see GET /v1/models).`, 'model_not_found', 'model');
}

/** Throws the OpenAI 404 unless `model` is the served name or the model directory. */
export function checkServedModel(served: Pick<ServedModel, 'servedModelName' | 'modelPath'>, model: string): void {
  if (model !== served.servedModelName && model !== served.modelPath) throw modelNotFound(model, served.servedModelName);
}

export class ModelRoutes {
  private readonly createdS = Math.floor(Date.now() / 1000);

  constructor(private readonly served: ServedModel) {}

  /** The model object of the list and of its own URL. */
  card(): Record<string, unknown> {
    const s = this.served;
    return {
      id: s.servedModelName,
      object: 'model',
      created: this.createdS,
      owned_by: 'afd',
      root: s.servedModelName, // never the model's directory: clients need not know this host's paths
      parent: null,
      max_model_len: s.maxModelLen,
      ...(s.modelInfo ? { afd: toApiModelInfo(s.modelInfo) } : {}),
    };
  }

  list(res: ServerResponse): void {
    sendJson(res, 200, { object: 'list', data: [this.card()] });
  }

  /** GET /v1/models/{id}: `id` as it stands in the path (percent-encoded, as the OpenAI client sends it). */
  retrieve(encodedId: string, res: ServerResponse): void {
    let id: string;
    try {
      id = decodeURIComponent(encodedId);
    } catch {
      throw ApiError.badRequest(`the model id in the path is not valid percent-encoding: ${encodedId}`, 'model', 'invalid_model_id');
    }
    // Only the model's id: the directory alias of `model` in requests is not a model of the list.
    if (id !== this.served.servedModelName) throw modelNotFound(id, this.served.servedModelName);
    sendJson(res, 200, this.card());
  }
}
