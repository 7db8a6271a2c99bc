/** Writes the role-process stdout protocol: one validated RoleEvent JSON object per line. */
import { formatRoleEvent, type RoleEvent, type RolePhase } from '@afd/shared';

export class RoleEvents {
  constructor(private readonly write: (line: string) => void = (line) => process.stdout.write(line)) {}

  emit(event: RoleEvent): void {
    this.write(formatRoleEvent(event));
  }

  progress(phase: RolePhase, bytesDone: number, bytesTotal: number, message?: string): void {
    this.emit({ type: 'progress', phase, bytesDone, bytesTotal, ...(message ? { message } : {}) });
  }
}
