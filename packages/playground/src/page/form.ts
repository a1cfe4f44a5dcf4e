import type { HeaderFormat } from '@sluice/core';
import { HEADER_FORMATS } from '@sluice/core/adapter';
import {
  FACTORY_NAMES,
  type FactoryName,
  type LimitSpec,
  MAX_LIMITS,
  type Mode,
  type PlaygroundConfig,
} from '../sim/config.js';
import {
  COMMON_PARAMS,
  PATTERNS,
  type ParamSpec,
  type PatternName,
  paramsOf,
  type TrafficSpec,
} from '../sim/traffic.js';
import { NEW_LIMIT, NEW_SOURCE } from './defaults.js';
import { OPTION_FIELDS, optionValue } from './fields.js';

const MAX_SOURCES = 4;

/**
 * The controls: limits, mode, traffic sources and header format, drawn from a configuration and
 * read back into one. `onChange(config, rebuilt)` is called on every edit; the form redraws itself
 * only when its shape changes (a limit added, an algorithm changed), so typing keeps its focus.
 */
export class ConfigForm {
  private config: PlaygroundConfig;

  constructor(
    private readonly root: HTMLElement,
    config: PlaygroundConfig,
    private readonly onChange: (config: PlaygroundConfig) => void,
  ) {
    this.config = config;
    root.addEventListener('input', (event) => this.edited(event));
    root.addEventListener('change', (event) => this.edited(event));
    root.addEventListener('click', (event) => this.clicked(event));
    this.render();
  }

  set(config: PlaygroundConfig): void {
    this.config = config;
    this.render();
  }

  private render(): void {
    const { config } = this;
    this.root.replaceChildren(
      section(
        'Limits',
        el('div', { class: 'mode' }, [
          radio('mode', 'side-by-side', config.mode, 'side by side'),
          radio('mode', 'layered', config.mode, 'layered (all-or-nothing)'),
        ]),
        ...config.limits.map((limit, i) => limitBox(limit, i, config.limits.length > 1)),
        config.limits.length < MAX_LIMITS ? button('add-limit', '+ add a limit') : text(''),
      ),
      section(
        'Traffic',
        ...config.traffic.map((source, i) => sourceBox(source, i, config.traffic.length > 1)),
        config.traffic.length < MAX_SOURCES ? button('add-source', '+ add a source') : text(''),
      ),
      section(
        'Headers',
        el('label', {}, [text('format '), select('headers', HEADER_FORMATS, config.headers)]),
      ),
    );
  }

  private edited(event: Event): void {
    const target = event.target as HTMLElement;
    // Text is read as it is typed; selects, boxes and files when they change.
    const typing =
      target instanceof HTMLTextAreaElement || (target instanceof HTMLInputElement && target.type === 'text');
    if (typing !== (event.type === 'input')) return;
    if (target instanceof HTMLInputElement && target.type === 'file') {
      const file = target.files?.[0];
      const box = target.closest<HTMLElement>('[data-source]');
      if (file === undefined || box === null) return;
      const i = Number(box.dataset.source);
      void file.text().then((csv) => {
        const traffic = this.config.traffic.map((s, j) =>
          j === i ? { pattern: 'csv' as const, text: csv } : s,
        );
        this.config = { ...this.config, traffic };
        this.render();
        this.onChange(this.config);
      });
      return;
    }
    const shape = target.dataset.shape === 'true';
    this.config = this.read(shape);
    if (shape) this.render();
    this.onChange(this.config);
  }

  private clicked(event: Event): void {
    const target = (event.target as HTMLElement).closest<HTMLElement>('[data-action]');
    if (target === null) return;
    const { config } = this;
    const action = target.dataset.action!;
    const at = Number(target.dataset.index);
    if (action === 'add-limit') {
      this.config = { ...config, limits: [...config.limits, initialLimit(NEW_LIMIT)] };
    } else if (action === 'remove-limit') {
      this.config = { ...config, limits: config.limits.filter((_, i) => i !== at) };
    } else if (action === 'add-source') {
      this.config = { ...config, traffic: [...config.traffic, { pattern: NEW_SOURCE }] };
    } else if (action === 'remove-source') {
      this.config = { ...config, traffic: config.traffic.filter((_, i) => i !== at) };
    } else {
      return;
    }
    this.render();
    this.onChange(this.config);
  }

  /** The configuration as the form shows it; `shape` when an algorithm or pattern select changed. */
  private read(shape: boolean): PlaygroundConfig {
    const root = this.root;
    const mode = (root.querySelector<HTMLInputElement>('input[name=mode]:checked')?.value ??
      'side-by-side') as Mode;
    const limits = [...root.querySelectorAll<HTMLElement>('[data-limit]')].map((box, i): LimitSpec => {
      const algorithm = box.querySelector<HTMLSelectElement>('select[name=algorithm]')!.value as FactoryName;
      const name = box.querySelector<HTMLInputElement>('input[name=name]')!.value.trim();
      if (shape && algorithm !== this.config.limits[i]?.algorithm) {
        return { ...initialLimit(algorithm), ...(name === '' ? {} : { name }) };
      }
      const options: Record<string, string | number | boolean> = {};
      for (const field of OPTION_FIELDS[algorithm]) {
        const input = box.querySelector<HTMLInputElement | HTMLSelectElement>(
          `[data-option="${field.name}"]`,
        );
        if (input === null) continue;
        const value = optionValue(
          field,
          input instanceof HTMLInputElement && input.type === 'checkbox'
            ? input.checked
              ? 'true'
              : ''
            : input.value,
        );
        if (value !== undefined && !(field.kind === 'flag' && value === false)) options[field.name] = value;
      }
      return { algorithm, ...(name === '' ? {} : { name }), ...options };
    });
    const traffic = [...root.querySelectorAll<HTMLElement>('[data-source]')].map((box, i): TrafficSpec => {
      const pattern = box.querySelector<HTMLSelectElement>('select[name=pattern]')!.value as PatternName;
      if (shape && pattern !== this.config.traffic[i]?.pattern) return { pattern };
      const params: Record<string, string | number> = {};
      for (const input of box.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('[data-param]')) {
        const value = input.value.trim();
        if (value === '') continue;
        params[input.dataset.param!] = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : input.value;
      }
      return { pattern, ...params };
    });
    const headers = root.querySelector<HTMLSelectElement>('select[name=headers]')!.value as HeaderFormat;
    return { mode, limits, traffic, headers };
  }
}

/** A new limit of `algorithm` with its fields' initial values. */
function initialLimit(algorithm: FactoryName): LimitSpec {
  const options: Record<string, string | number | boolean> = {};
  for (const field of OPTION_FIELDS[algorithm])
    if (field.initial !== undefined) options[field.name] = field.initial;
  return { algorithm, ...options };
}

function limitBox(limit: LimitSpec, i: number, removable: boolean): HTMLElement {
  const known = (FACTORY_NAMES as readonly string[]).includes(limit.algorithm);
  const fields = known ? OPTION_FIELDS[limit.algorithm] : [];
  return el('fieldset', { class: 'box', 'data-limit': String(i) }, [
    el('div', { class: 'row' }, [
      select('algorithm', FACTORY_NAMES, limit.algorithm, true),
      input('name', limit.name ?? '', { placeholder: 'name (optional)', class: 'name' }),
      removable ? button('remove-limit', '×', i, 'remove this limit') : text(''),
    ]),
    ...fields.map((field) => {
      const value = limit[field.name];
      const control =
        field.kind === 'choice'
          ? select('', ['', ...(field.choices ?? [])], String(value ?? ''), false, {
              'data-option': field.name,
            })
          : field.kind === 'flag'
            ? checkbox(value === true, { 'data-option': field.name })
            : input('', value === undefined ? '' : String(value), {
                'data-option': field.name,
                placeholder: field.kind === 'duration' ? 'ms or 1s' : '',
              });
      return el('label', { class: 'field', title: field.help }, [
        el('span', {}, [text(field.name)]),
        control,
      ]);
    }),
  ]);
}

function sourceBox(source: TrafficSpec, i: number, removable: boolean): HTMLElement {
  const known = (PATTERNS as readonly string[]).includes(source.pattern);
  const params = known ? paramsOf(source.pattern) : [];
  const common = params.filter((param) => COMMON_PARAMS.includes(param));
  return el('fieldset', { class: 'box', 'data-source': String(i) }, [
    el('div', { class: 'row' }, [
      select('pattern', PATTERNS, source.pattern, true),
      removable ? button('remove-source', '×', i, 'remove this source') : text(''),
    ]),
    ...params.filter((param) => !common.includes(param)).map((param) => paramField(source, param)),
    ...(common.length === 0
      ? []
      : [
          el('details', common.some((param) => source[param.name] !== undefined) ? { open: '' } : {}, [
            el('summary', {}, [text('keys, costs, start, seed')]),
            el(
              'div',
              { class: 'more' },
              common.map((param) => paramField(source, param)),
            ),
          ]),
        ]),
  ]);
}

function paramField(source: TrafficSpec, param: ParamSpec): HTMLElement {
  const value = source[param.name];
  if (param.name === 'text') {
    return el('div', { class: 'csv' }, [
      el('textarea', { 'data-param': 'text', rows: '6', placeholder: 'time,key,cost\n0,alice,1\n5,bob,2' }, [
        text(value === undefined ? '' : String(value)),
      ]),
      el('label', { class: 'upload' }, [
        text('or upload a CSV file '),
        el('input', { type: 'file', accept: '.csv,text/csv,text/plain' }, []),
      ]),
    ]);
  }
  return el('label', { class: 'field', title: param.help }, [
    el('span', {}, [text(param.name)]),
    input('', value === undefined ? '' : String(value), {
      'data-param': param.name,
      placeholder: String(param.default),
    }),
  ]);
}

function section(title: string, ...children: Node[]): HTMLElement {
  return el('section', {}, [el('h2', {}, [text(title)]), ...children]);
}

function el(tag: string, attributes: Record<string, string>, children: Node[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function text(value: string): Text {
  return document.createTextNode(value);
}

function input(name: string, value: string, attributes: Record<string, string>): HTMLInputElement {
  const node = el('input', { type: 'text', ...attributes }, []) as HTMLInputElement;
  if (name !== '') node.name = name;
  node.value = value;
  return node;
}

function checkbox(checked: boolean, attributes: Record<string, string>): HTMLInputElement {
  const node = el('input', { type: 'checkbox', ...attributes }, []) as HTMLInputElement;
  node.checked = checked;
  return node;
}

function select(
  name: string,
  options: readonly string[],
  value: string,
  shape = false,
  attributes: Record<string, string> = {},
): HTMLSelectElement {
  const node = el(
    'select',
    { ...attributes, ...(shape ? { 'data-shape': 'true' } : {}) },
    options.map((o) => el('option', { value: o }, [text(o === '' ? '(default)' : o)])),
  ) as HTMLSelectElement;
  if (name !== '') node.name = name;
  if (!options.includes(value)) node.append(el('option', { value }, [text(value)]));
  node.value = value;
  return node;
}

function radio(name: string, value: string, current: string, label: string): HTMLElement {
  const node = el('input', { type: 'radio', name, value }, []) as HTMLInputElement;
  node.checked = value === current;
  return el('label', {}, [node, text(` ${label}`)]);
}

function button(action: string, label: string, index?: number, title?: string): HTMLElement {
  return el(
    'button',
    {
      type: 'button',
      'data-action': action,
      ...(index === undefined ? {} : { 'data-index': String(index) }),
      ...(title === undefined ? {} : { title }),
    },
    [text(label)],
  );
}
