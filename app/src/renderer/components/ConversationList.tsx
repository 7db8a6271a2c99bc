/**
 * The Playground's chats: new, switch, rename (double-click or F2) and delete (two clicks),
 * most recent first, narrowed by a search over titles and message text; export one chat or
 * all as a JSON file, and import such a file.
 */
import { useMemo, useRef, useState, type ChangeEvent, type KeyboardEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useChat, useStores } from '../AppContext.js';
import { downloadText } from '../lib/download.js';
import { matchesSearch, searchWords } from '../stores/chatSearch.js';
import { exportChats, exportFileName } from '../stores/chatTransfer.js';
import { isLive } from '../stores/conversations.js';

export function ConversationList() {
  const [query, setQuery] = useState('');
  const words = useMemo(() => searchWords(query), [query]);
  const list = useChat(
    useShallow((s) =>
      [...s.conversations]
        .filter((c) => matchesSearch(c, words))
        .sort((a, b) => b.updatedAtMs - a.updatedAtMs)
        .map((c) => `${c.id}\u0000${c.title}\u0000${c.messages.length}\u0000${c.messages.some((m) => m.role === 'assistant' && isLive(m)) ? 1 : 0}`),
    ),
  );
  const activeId = useChat((s) => s.activeId);
  const { newConversation, selectConversation, renameConversation, deleteConversation, importConversations } = useChat((s) => s);
  const store = useStores().chat;
  const fileInput = useRef<HTMLInputElement>(null);
  /** Downloads chat `id`, or every chat. */
  const exportToFile = (id?: string): void => {
    const all = store.getState().conversations;
    const chosen = id === undefined ? all : all.filter((c) => c.id === id);
    const nowMs = Date.now();
    downloadText(exportFileName(chosen, nowMs), JSON.stringify(exportChats(chosen, nowMs), null, 2));
  };
  const onImportFile = async (e: ChangeEvent<HTMLInputElement>): Promise<void> => {
    const file = e.target.files?.[0];
    e.target.value = ''; // the same file may be chosen again
    if (file) importConversations(await file.text());
  };
  const [renaming, setRenaming] = useState<{ id: string; text: string } | null>(null);
  // Deleting takes a second click on the same button, so one slip loses nothing.
  const [confirming, setConfirming] = useState<string | null>(null);
  const finishRename = (): void => {
    if (renaming) renameConversation(renaming.id, renaming.text);
    setRenaming(null);
  };
  const onRenameKey = (e: KeyboardEvent<HTMLInputElement>): void => {
    if (e.key === 'Enter') finishRename();
    else if (e.key === 'Escape') setRenaming(null);
  };
  return (
    <nav className="panel conversations" aria-label="Chats" data-testid="conversations">
      <div className="row">
        <h3 style={{ margin: 0 }}>Chats</h3>
        <span className="spacer" />
        <button className="btn small" onClick={newConversation} data-testid="chat-new" title="Start a new chat">
          New
        </button>
      </div>
      <div className="row conversation-files">
        <button className="btn small" onClick={() => exportToFile(activeId)} data-testid="chat-export" title="Save the chat on screen as a JSON file">
          Export chat
        </button>
        <button className="btn small" onClick={() => exportToFile()} data-testid="chat-export-all" title="Save every chat as a JSON file">
          Export all
        </button>
        <button className="btn small" onClick={() => fileInput.current?.click()} data-testid="chat-import" title="Add the chats of a JSON file exported here">
          Import
        </button>
        <input ref={fileInput} type="file" accept="application/json,.json" hidden onChange={(e) => void onImportFile(e)} data-testid="chat-import-file" />
      </div>
      <input
        type="search"
        className="conversation-search"
        placeholder="Search chats"
        aria-label="Search chats (titles and messages)"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onKeyDown={(e) => e.key === 'Escape' && setQuery('')}
        data-testid="chat-search"
      />
      {list.length === 0 && (
        <p className="muted" data-testid="chat-search-empty">
          No chat has all of these words.
        </p>
      )}
      <ul>
        {list.map((row) => {
          const [id, title, count, running] = row.split('\u0000') as [string, string, string, string];
          const active = id === activeId;
          return (
            <li key={id} className={active ? 'active' : ''} data-testid="conversation" data-title={title}>
              {renaming?.id === id ? (
                <input aria-label="Chat name (Enter keeps, Esc cancels)" data-testid="conversation-rename-input" value={renaming.text} autoFocus onChange={(e) => setRenaming({ id, text: e.target.value })} onKeyDown={onRenameKey} onBlur={finishRename} />
              ) : (
                <button
                  className="conversation-title"
                  aria-current={active ? 'true' : undefined}
                  onClick={() => selectConversation(id)}
                  onDoubleClick={() => setRenaming({ id, text: title })}
                  onKeyDown={(e) => e.key === 'F2' && setRenaming({ id, text: title })}
                  title={`${title} (${count} messages; double-click or F2 to rename)`}
                  data-testid="conversation-open"
                >
                  <span className="ellipsis">{title}</span>
                  {running === '1' && <span className="badge info">live</span>}
                </button>
              )}
              <span className="conversation-actions">
                <button className="btn small" onClick={() => setRenaming({ id, text: title })} aria-label={`Rename chat ${title}`} data-testid="conversation-rename">
                  Rename
                </button>
                <button
                  className="btn small danger"
                  onClick={() => {
                    if (confirming !== id) return setConfirming(id);
                    setConfirming(null);
                    void deleteConversation(id);
                  }}
                  onBlur={() => setConfirming((c) => (c === id ? null : c))}
                  aria-label={confirming === id ? `Really delete chat ${title}` : `Delete chat ${title}`}
                  data-testid="conversation-delete"
                >
                  {confirming === id ? 'Really delete?' : 'Delete'}
                </button>
              </span>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
