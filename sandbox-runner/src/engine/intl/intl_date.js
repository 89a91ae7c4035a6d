
  // ---- Intl.DateTimeFormat --------------------------------------------------------------------
  // ECMA-402's component options become an ICU4X field set `{date, time, length, year, align}`
  // (see intl/datetime.rs); combinations a field set cannot express are refused by name.
  const DT = 'Intl.DateTimeFormat';
  const DATE_FIELDS = ['weekday', 'year', 'month', 'day'];
  const TIME_FIELDS = ['dayPeriod', 'hour', 'minute', 'second', 'fractionalSecondDigits'];
  const COMPONENTS = [
    ['weekday', ['narrow', 'short', 'long']], ['era', ['narrow', 'short', 'long']],
    ['year', ['2-digit', 'numeric']], ['month', ['2-digit', 'numeric', 'narrow', 'short', 'long']],
    ['day', ['2-digit', 'numeric']], ['dayPeriod', ['narrow', 'short', 'long']],
    ['hour', ['2-digit', 'numeric']], ['minute', ['2-digit', 'numeric']], ['second', ['2-digit', 'numeric']],
    ['fractionalSecondDigits', null],
    ['timeZoneName', ['short', 'long', 'shortOffset', 'longOffset', 'shortGeneric', 'longGeneric']],
  ];
  const STYLES = ['full', 'long', 'medium', 'short'];
  const VALID_DATES = ['D', 'MD', 'YMD', 'DE', 'MDE', 'YMDE', 'E', 'M', 'YM', 'Y'];

  // `required`/`defaults` as ECMA-402's ToDateTimeOptions: 'date', 'time' or 'any'/'all'.
  function makeDateTimeFormat(self, locales, options, required, defaults) {
    const o = toOptions(options);
    const r = resolve(locales, o, DT);
    const cal = getOption(o, 'calendar', 'string', undefined, undefined, DT);
    if (cal !== undefined && cal !== 'gregory' && cal !== 'iso8601') refuseValue(DT, 'calendar', cal, ['gregory']);
    const nu = getOption(o, 'numberingSystem', 'string', undefined, undefined, DT);
    if (nu !== undefined && nu !== 'latn') refuseValue(DT, 'numberingSystem', nu, ['latn']);
    const hour12 = getOption(o, 'hour12', 'boolean', undefined, undefined, DT);
    let hourCycle = getOption(o, 'hourCycle', 'string', ['h11', 'h12', 'h23', 'h24'], undefined, DT);
    if (hour12 !== undefined) hourCycle = hour12 ? 'h12' : 'h23';
    const shown = [];
    if (hourCycle === undefined && ['h11', 'h12', 'h23', 'h24'].includes(r.ext.hc)) {
      hourCycle = r.ext.hc;
      shown.push(`hc-${hourCycle}`);
    }
    if (hourCycle === 'h24') refuseValue(DT, 'hourCycle', hourCycle, ['h11', 'h12', 'h23']);
    let timeZone = o.timeZone;
    if (timeZone === undefined) timeZone = 'UTC';
    else {
      const asked = str(timeZone);
      timeZone = n.timeZone(asked);
      if (timeZone === undefined) throw new RangeError(`Invalid time zone specified: ${asked}`);
    }
    const c = {};
    let any = false;
    for (const [name, values] of COMPONENTS) {
      c[name] = values === null ? getNumber(o, name, 1, 3, undefined) : getOption(o, name, 'string', values, undefined, DT);
      if (c[name] !== undefined) any = true;
    }
    getOption(o, 'formatMatcher', 'string', ['basic', 'best fit'], 'best fit', DT);
    const dateStyle = getOption(o, 'dateStyle', 'string', STYLES, undefined, DT);
    const timeStyle = getOption(o, 'timeStyle', 'string', STYLES, undefined, DT);
    if (dateStyle !== undefined || timeStyle !== undefined) {
      if (any) {
        const name = COMPONENTS.find(([k]) => c[k] !== undefined)[0];
        throw new TypeError(`Can't set option ${name} when ${dateStyle !== undefined ? 'dateStyle' : 'timeStyle'} is used`);
      }
      if (required === 'date' && dateStyle === undefined) throw new TypeError('Invalid option : timeStyle');
      if (required === 'time' && timeStyle === undefined) throw new TypeError('Invalid option : dateStyle');
    } else {
      const needDate = required !== 'time' && !DATE_FIELDS.some((k) => c[k] !== undefined);
      const needTime = required !== 'date' && !TIME_FIELDS.some((k) => c[k] !== undefined);
      if ((required === 'any' && needDate && needTime) || (required === 'date' && needDate) || (required === 'time' && needTime)) {
        if (defaults === 'date' || defaults === 'all') c.year = c.month = c.day = 'numeric';
        if (defaults === 'time' || defaults === 'all') c.hour = c.minute = c.second = 'numeric';
      }
    }
    refuse(c, DT, ['era', 'dayPeriod', 'timeZoneName'], ' (no era, day-period or time-zone-name fields)');
    if (timeStyle === 'full' || timeStyle === 'long') refuseValue(DT, 'timeStyle', timeStyle, ['medium', 'short']);
    const spec = dateStyle !== undefined || timeStyle !== undefined
      ? styleSpec(dateStyle, timeStyle)
      : componentSpec(c);
    const hasHour = spec.time !== '';
    slots.set(self, {
      kind: 'DateTimeFormat', locale: withKeywords(r.locale, hasHour ? shown : []), timeZone, spec,
      native: withKeywords(r.locale, hasHour && hourCycle ? [`hc-${hourCycle}`] : []),
      hourCycle: hasHour ? hourCycle : undefined, c, dateStyle, timeStyle, bound: undefined,
    });
    return self;
  }
  function styleSpec(dateStyle, timeStyle) {
    const lengths = { full: 'long', long: 'long', medium: 'medium', short: 'short' };
    const date = dateStyle === undefined ? '' : dateStyle === 'full' ? 'YMDE' : 'YMD';
    const time = timeStyle === undefined ? '' : timeStyle === 'short' ? 'm' : 's';
    return { date, time, length: lengths[dateStyle ?? timeStyle], year: 'auto', align: 'auto' };
  }
  function componentSpec(c) {
    const date = (c.year ? 'Y' : '') + (c.month ? 'M' : '') + (c.day ? 'D' : '') + (c.weekday ? 'E' : '');
    if (date !== '' && !VALID_DATES.includes(date)) {
      const names = DATE_FIELDS.filter((k) => c[k] !== undefined).join(', ');
      throw new RangeError(`${DT}: the combination of date fields ${names} is not supported in this sandbox`);
    }
    if ((c.minute && !c.hour) || (c.second && !c.minute) || (c.fractionalSecondDigits && !c.second)) {
      throw new RangeError(`${DT}: minute, second and fractionalSecondDigits are supported only with the larger time fields (hour, minute, second)`);
    }
    if (c.month === 'narrow' || c.weekday === 'narrow') {
      throw new RangeError(`${DT}: 'narrow' month and weekday are not supported in this sandbox`);
    }
    const textMonth = c.month === 'long' || c.month === 'short';
    if (c.weekday && c.month && !textMonth) {
      throw new RangeError(`${DT}: a weekday with a numeric month is not supported in this sandbox (use month 'short' or 'long', or dateStyle)`);
    }
    let length = 'short';
    const width = textMonth ? c.month : c.weekday;
    if (width === 'long') length = 'long';
    else if (width === 'short') length = 'medium';
    const time = c.fractionalSecondDigits ? String(c.fractionalSecondDigits) : c.second ? 's' : c.minute ? 'm' : c.hour ? 'h' : '';
    const padded = ['month', 'day', 'hour', 'minute'].some((k) => c[k] === '2-digit');
    return { date, time, length, year: c.year === 'numeric' ? 'full' : 'auto', align: padded ? 'column' : 'auto' };
  }
  function formatDate(s, date) {
    const t = date === undefined ? Date.now() : Number(date);
    if (!Number.isFinite(t) || Math.abs(t) > 8.64e15) throw new RangeError('Invalid time value');
    // CLDR puts U+202F before AM/PM; V8 (Node, Chrome) prints a plain space, and so does this.
    return n.date(s.native, s.timeZone, Math.trunc(t) + 0, s.spec).replace(/\u202f/g, ' ');
  }
  function DateTimeFormat() {
    const self = new.target === undefined ? Object.create(DateTimeFormat.prototype) : this;
    const [locales, options] = arguments;
    return makeDateTimeFormat(self, locales, options, 'any', 'date');
  }
  constructor(DateTimeFormat, 0);
  getters(DateTimeFormat, {
    get format() {
      const s = state(this, 'DateTimeFormat', 'format');
      if (s.bound === undefined) {
        s.bound = (date) => formatDate(s, date);
        Object.defineProperty(s.bound, 'name', { value: '' });
      }
      return s.bound;
    },
  });
  methods(DateTimeFormat, {
    resolvedOptions() {
      const s = state(this, 'DateTimeFormat', 'resolvedOptions');
      const out = { locale: s.locale, calendar: 'gregory', numberingSystem: 'latn', timeZone: s.timeZone };
      if (s.hourCycle !== undefined || s.spec.time !== '') {
        // The locale's own cycle when none was asked for: does 13:00 show as 13?
        const cycle = s.hourCycle ?? (n.date(s.native, 'UTC', 13 * 3600e3, { date: '', time: 'h', length: 'short' }).includes('13') ? 'h23' : 'h12');
        out.hourCycle = cycle;
        out.hour12 = cycle === 'h11' || cycle === 'h12';
      }
      if (s.dateStyle !== undefined || s.timeStyle !== undefined) {
        if (s.dateStyle !== undefined) out.dateStyle = s.dateStyle;
        if (s.timeStyle !== undefined) out.timeStyle = s.timeStyle;
      } else {
        for (const [name] of COMPONENTS) if (s.c[name] !== undefined) out[name] = s.c[name];
      }
      return out;
    },
  });
  tag(DateTimeFormat, DT);
