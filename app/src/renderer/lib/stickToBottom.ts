/**
 * A scroll box that follows its newest content: while the reader is at (or near) the
 * bottom, new content keeps it there; once they scroll up to read, it stays where they
 * put it until they scroll back down. The box scrolls, not the page, so the controls
 * around it (the composer and its Stop button) stay where they are while a reply streams.
 */
import { useCallback, useLayoutEffect, useRef, type DependencyList, type RefObject } from 'react';

/** How close to the bottom (px) still counts as "at the bottom". */
export const stickSlackPx = 48;

/** Whether a box scrolled this far is at its bottom, give or take `slack`. */
export function atBottom(box: { scrollTop: number; scrollHeight: number; clientHeight: number }, slack = stickSlackPx): boolean {
  return box.scrollHeight - box.scrollTop - box.clientHeight <= slack;
}

/**
 * Whether the box still follows after a scroll event. Only the reader unsticks it, by
 * scrolling up: a scroll that did not move up (ours, to the bottom, whose event can arrive
 * after more content already grew the box) keeps following, and reaching the bottom again
 * sticks it back.
 */
export function stillStuck(stuck: boolean, previousTop: number, box: { scrollTop: number; scrollHeight: number; clientHeight: number }): boolean {
  if (atBottom(box)) return true;
  return stuck && box.scrollTop >= previousTop;
}

/**
 * Returns the box's ref and its scroll handler. `follow` changes (new content) scroll it to
 * the bottom when it was there; `reset` changes (another conversation, a new message) always do.
 */
export function useStickToBottom<T extends HTMLElement>(follow: DependencyList, reset: DependencyList): { ref: RefObject<T | null>; onScroll: () => void } {
  const ref = useRef<T>(null);
  const stuck = useRef(true);
  const lastTop = useRef(0);
  const onScroll = useCallback(() => {
    const el = ref.current;
    if (!el) return;
    stuck.current = stillStuck(stuck.current, lastTop.current, el);
    lastTop.current = el.scrollTop;
  }, []);
  const toBottom = (): void => {
    const el = ref.current;
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    lastTop.current = el.scrollTop;
  };
  useLayoutEffect(() => {
    stuck.current = true;
    toBottom();
  }, reset);
  // New content scrolls once per frame at most (a scroll forces a layout of the whole box).
  const frame = useRef(0);
  useLayoutEffect(() => {
    if (!stuck.current || frame.current !== 0) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      if (stuck.current) toBottom();
    });
  }, follow);
  useLayoutEffect(() => () => cancelAnimationFrame(frame.current), []);
  return { ref, onScroll };
}
