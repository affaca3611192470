// "New document": a form built from the served schema, prefilled with its defaults (its examples are shown as
// placeholders, never sent), checked here before sending, then created with `POST /documents {"content": ...}`.
// The server validates the whole document; a refusal stores nothing and each violation is shown at its field.
// Every text (schema titles, values, messages) goes into the page as text, never as HTML.

import { api, errorBox } from './api.js';
import { h } from './dom.js';
import { child as childPointer, within } from './pointer.js';

const ABSENT = Symbol('absent');
const DEPTH = 6; // deeper objects are edited as JSON

const typesOf = (schema) => {
  const declared = schema.type;
  if (Array.isArray(declared)) return declared;
  if (typeof declared === 'string') return [declared];
  if (schema.properties) return ['object'];
  return [];
};

const example = (schema) => (Array.isArray(schema.examples) && schema.examples.length ? schema.examples[0] : undefined);

function placeholderOf(schema) {
  const given = example(schema);
  if (given === undefined) return undefined;
  return typeof given === 'string' ? given : JSON.stringify(given);
}

/** The field of one node: its element, how to read its value, and where its messages go. */
class Field {
  constructor(pointer, schema, required, label) {
    this.pointer = pointer;
    this.schema = schema;
    this.required = required;
    this.messages = h('ul', { class: 'field-errors', 'aria-live': 'polite' });
    this.label = label;
  }

  wrap(control, extra = null) {
    this.control = control;
    control.setAttribute('data-pointer', this.pointer || '/');
    const id = `new-${(this.pointer || 'root').replace(/[^A-Za-z0-9_-]/g, '_')}`;
    control.id = id;
    const description = this.schema.description ? h('p', { class: 'hint' }, this.schema.description) : null;
    this.element = h('div', { class: 'field', 'data-pointer': this.pointer || '/' },
      h('label', { for: id }, this.label, this.required ? h('span', { class: 'required', title: 'required' }, ' *') : ''),
      control, extra, description, this.messages);
    return this.element;
  }

  clear() {
    this.messages.replaceChildren();
    this.element.classList.remove('invalid');
    this.control?.removeAttribute('aria-invalid');
  }

  show(message) {
    this.messages.append(h('li', {}, message));
    this.element.classList.add('invalid');
    this.control?.setAttribute('aria-invalid', 'true');
  }
}

class ObjectField extends Field {
  constructor(pointer, schema, required, label, initial, depth, fields) {
    super(pointer, schema, required, label);
    const properties = schema.properties || {};
    const needed = new Set(Array.isArray(schema.required) ? schema.required : []);
    this.children = [];
    const present = initial && typeof initial === 'object' && !Array.isArray(initial) ? initial : {};
    for (const [name, child] of Object.entries(properties)) {
      const value = Object.hasOwn(present, name) ? present[name] : ABSENT;
      // members shown: the required ones, and those with a default to start from; the rest can be added later
      if (!needed.has(name) && value === ABSENT && !(child && typeof child === 'object' && 'default' in child)) continue;
      this.children.push([name, makeField(childPointer(pointer, name), child || {}, needed.has(name),
        child?.title || name, value, depth + 1, fields)]);
    }
    this.extra = Object.fromEntries(Object.entries(present).filter(([name]) => !Object.hasOwn(properties, name)));
    this.element = h('fieldset', { class: 'field object', 'data-pointer': pointer || '/' },
      h('legend', {}, label, required ? h('span', { class: 'required', title: 'required' }, ' *') : ''),
      schema.description ? h('p', { class: 'hint' }, schema.description) : null,
      this.messages, this.children.map(([, field]) => field.element));
  }

  read(problems) {
    const value = { ...this.extra };
    for (const [name, field] of this.children) {
      const child = field.read(problems);
      if (child !== ABSENT) value[name] = child;
    }
    return value;
  }
}

class ScalarField extends Field {
  constructor(pointer, schema, required, label, initial) {
    super(pointer, schema, required, label);
    const types = typesOf(schema);
    const placeholder = placeholderOf(schema);
    if (Array.isArray(schema.enum)) {
      this.kind = 'enum';
      const select = h('select', {},
        required ? null : h('option', { value: '' }, '(none)'),
        schema.enum.map((choice, index) => h('option', { value: String(index) },
          typeof choice === 'string' ? choice : JSON.stringify(choice))));
      const at = initial === ABSENT ? -1 : schema.enum.findIndex((choice) => JSON.stringify(choice) === JSON.stringify(initial));
      select.value = at >= 0 ? String(at) : (required ? '0' : '');
      this.wrap(select);
    } else if (types.length === 1 && types[0] === 'boolean') {
      this.kind = 'boolean';
      this.wrap(h('input', { type: 'checkbox', checked: initial === true }));
    } else if (types.length === 1 && (types[0] === 'integer' || types[0] === 'number')) {
      this.kind = types[0];
      this.wrap(h('input', { type: 'number', step: types[0] === 'integer' ? '1' : 'any', min: schema.minimum,
        max: schema.maximum, placeholder, value: typeof initial === 'number' ? String(initial) : '' }));
    } else {
      this.kind = 'string';
      const long = schema.maxLength > 200; // a paragraph rather than a line
      const text = typeof initial === 'string' ? initial : '';
      this.wrap(long ? h('textarea', { rows: 2, placeholder, value: text })
        : h('input', { type: 'text', placeholder, value: text, maxlength: schema.maxLength }));
    }
  }

  read(problems) {
    const control = this.control;
    if (this.kind === 'enum') {
      if (control.value === '') return this.need(problems);
      return this.schema.enum[Number(control.value)];
    }
    if (this.kind === 'boolean') return control.checked;
    if (this.kind === 'integer' || this.kind === 'number') {
      if (control.value.trim() === '') return this.need(problems);
      const number = Number(control.value);
      if (!Number.isFinite(number) || (this.kind === 'integer' && !Number.isInteger(number))) {
        problems.push([this, `expected ${this.kind === 'integer' ? 'a whole number' : 'a number'}`]);
        return ABSENT;
      }
      return number;
    }
    if (control.value === '') {
      if (!this.required) return ABSENT;
      // an empty required text is sent only where the schema allows an empty string
      if (this.schema.minLength > 0 || this.schema.pattern !== undefined) return this.need(problems);
    }
    return control.value;
  }

  need(problems) {
    if (this.required) problems.push([this, 'required: give a value']);
    return ABSENT;
  }
}

class JsonField extends Field {
  constructor(pointer, schema, required, label, initial) {
    super(pointer, schema, required, label);
    const types = typesOf(schema);
    let start = initial;
    if (start === ABSENT && required) start = types.includes('array') ? [] : types.includes('object') ? {} : ABSENT;
    this.wrap(h('textarea', { class: 'mono', rows: pointer === '' ? 16 : 3, spellcheck: 'false', placeholder: placeholderOf(schema),
      value: start === ABSENT ? '' : JSON.stringify(start, null, 2) }), h('span', { class: 'hint' }, 'JSON'));
  }

  read(problems) {
    const text = this.control.value.trim();
    if (text === '') {
      if (this.required) problems.push([this, 'required: give a value (JSON)']);
      return ABSENT;
    }
    try {
      return JSON.parse(text);
    } catch (error) {
      problems.push([this, `not JSON: ${error.message}`]);
      return ABSENT;
    }
  }
}

function makeField(pointer, schema, required, label, initial, depth, fields) {
  const types = typesOf(schema);
  let field;
  if (types.length === 1 && types[0] === 'object' && schema.properties && depth < DEPTH) {
    field = new ObjectField(pointer, schema, required, label, initial === ABSENT ? schema.default : initial, depth,
      fields);
  } else if (Array.isArray(schema.enum) || (types.length === 1 && ['string', 'integer', 'number', 'boolean'].includes(types[0]))) {
    field = new ScalarField(pointer, schema, required, label, initial === ABSENT && 'default' in schema ? schema.default : initial);
  } else {
    field = new JsonField(pointer, schema, required, label, initial === ABSENT && 'default' in schema ? schema.default : initial);
  }
  fields.push(field);
  return field;
}

/** The form's field for a violation at `path` (a JSON Pointer): the field of that node, or of its closest
 * ancestor that has one (a required member that is missing names its parent: its own field, when shown). */
function fieldFor(fields, top, violation) {
  let path = violation.path && violation.path !== '/' ? violation.path : '';
  if (violation.code === 'required-missing' && typeof violation.expected === 'string') {
    const member = childPointer(path, violation.expected);
    if (fields.some((field) => field.pointer === member)) path = member;
  }
  let best = top;
  for (const field of fields) {
    if (within(path, field.pointer) && field.pointer.length > best.pointer.length) best = field;
  }
  return best;
}

/** Open the new-document form in `host`; `onCreated(doc_id)` once the server created it. */
export async function newDocumentForm(host, onCreated) {
  host.replaceChildren(h('p', {}, 'Reading the schema…'));
  let root;
  try {
    root = (await api('schema')).root_schema;
  } catch (error) {
    host.replaceChildren(errorBox(error, 'The schema could not be read'));
    return;
  }
  let fields = [];
  let top = makeField('', root || {}, true, root?.title || 'The document', ABSENT, 0, fields);
  let asJson = false; // the whole document in one JSON field instead of the form
  const status = h('div', { class: 'status', id: 'create-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'create-submit', class: 'primary' }, 'Create');
  const toggle = h('button', { type: 'button', id: 'create-mode', onclick: switchMode }, 'Edit as JSON');
  const body = h('div', { class: 'body' }, top.element);
  const form = h('form', { class: 'new-document', id: 'new-document', novalidate: true, onsubmit: send },
    h('h2', {}, 'New document'),
    h('p', { class: 'hint' }, 'Filled with the schema\'s defaults; greyed text shows its examples and is not sent. '
      + 'Members not shown can be added as JSON, or once the document exists.'),
    body, status,
    h('div', { class: 'toolbar' }, submit, toggle,
      h('button', { type: 'button', id: 'create-cancel', onclick: () => host.replaceChildren() }, 'Cancel')));
  host.replaceChildren(form);
  form.querySelector('input, select, textarea')?.focus();

  // form -> JSON: what the form holds so far; JSON -> form: the form rebuilt from the JSON (members it has no
  // field for are kept as they are)
  function switchMode() {
    status.replaceChildren();
    const problems = [];
    const content = top.read(problems);
    if (asJson && problems.length) {
      top.clear();
      for (const [field, message] of problems) field.show(message);
      return;
    }
    asJson = !asJson;
    fields = [];
    top = asJson
      ? makeField('', {}, true, 'The document as JSON', content === ABSENT ? {} : content, 0, fields)
      : makeField('', root || {}, true, root?.title || 'The document', content, 0, fields);
    toggle.textContent = asJson ? 'Edit as a form' : 'Edit as JSON';
    body.replaceChildren(top.element);
    form.querySelector('input, select, textarea')?.focus();
  }

  async function send(event) {
    event.preventDefault();
    for (const field of fields) field.clear();
    status.replaceChildren();
    const problems = [];
    const content = top.read(problems);
    if (problems.length) {
      for (const [field, message] of problems) field.show(message);
      status.replaceChildren(h('p', { class: 'error', role: 'alert' },
        `Not sent: ${problems.length} field${problems.length === 1 ? '' : 's'} to put right.`));
      problems[0][0].control?.focus();
      return;
    }
    submit.disabled = true;
    status.replaceChildren('Creating…');
    try {
      const made = await api('documents', { method: 'POST', body: { content: content === ABSENT ? {} : content } });
      onCreated(made.doc_id);
    } catch (error) {
      const violations = Array.isArray(error.details?.violations) ? error.details.violations : [];
      for (const violation of violations) fieldFor(fields, top, violation).show(violation.message || violation.code);
      status.replaceChildren(errorBox(error, violations.length
        ? `Refused by the schema (${violations.length} violation${violations.length === 1 ? '' : 's'}): nothing was stored`
        : 'The document was not created'));
      form.querySelector('.field.invalid [data-pointer]')?.focus();
    } finally {
      submit.disabled = false;
    }
  }
}
