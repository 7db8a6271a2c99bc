/**
 * Saves text as a file the user keeps: a download in the browser, the save dialog in
 * Electron (both handle an anchor with `download`).
 */
export function downloadText(fileName: string, text: string, mimeType = 'application/json'): void {
  downloadBlob(fileName, new Blob([text], { type: mimeType }));
}

/** Saves a Blob (an image, a CSV) as a file, like downloadText. */
export function downloadBlob(fileName: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // Freed once the download has surely read it.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
