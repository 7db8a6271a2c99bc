/**
 * Electron preload (runs with contextIsolation and sandbox): exposes only the typed
 * bridge as window.afd. No Node API, no ipcRenderer, no secrets reach the page.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { createBridgeApi } from './bridgeApi.js';

const api = createBridgeApi(ipcRenderer);
contextBridge.exposeInMainWorld('afd', { invoke: api.invoke, on: api.on });
