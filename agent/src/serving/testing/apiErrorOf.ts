/** Test helper: the ApiError `fn` throws (fails the test when it throws none, or throws something else). */
import { ApiError } from '../api/ApiError.js';

export function apiErrorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError, nothing was thrown');
}
