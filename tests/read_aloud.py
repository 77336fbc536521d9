"""What a screen reader would read on a slide, checked in the browser walks (tests/slides.py
problems_on): a chart's drawing hidden but its toolbar kept, every equation said as words once."""

# A chart's drawing is hidden from screen readers (ui/drawing/a11y.py: its "Figure:" line says
# what it shows), its toolbar is not (a keyboard's).
CHARTS_READ_JS = """() => {
  const out = [];
  for (const c of document.querySelectorAll('.js-plotly-plot')) {
    const name = (c.querySelector('.gtitle') || {}).textContent || 'an untitled chart';
    if ([...c.querySelectorAll('svg.main-svg')].some(s => !s.closest('[aria-hidden="true"]')))
      out.push(`${name}: its drawing is read by screen readers`);
    if ([...c.querySelectorAll('.modebar-btn')].some(b => b.closest('[aria-hidden="true"]')))
      out.push(`${name}: its toolbar is hidden from screen readers`);
  }
  return out;
}"""

# every displayed equation is read as words, once (ui/drawing/equation.py, the page's script):
# its KaTeX hidden from screen readers; the words in the hidden paragraph after it, or, where
# its box scrolls sideways (and only there), as the name of its tab stop with that paragraph
# hidden
EQUATIONS_READ_JS = """() => {
  const out = [];
  for (const d of document.querySelectorAll('.katex-display')) {
    const k = d.querySelector('.katex'), box = d.closest('[data-testid="stElementContainer"]');
    const next = box && box.nextElementSibling, said = next && next.querySelector('.eq-said');
    const name = (d.getAttribute('aria-label') || '');
    const what = (said ? said.textContent : k.textContent).slice(0, 60);
    if (!said) { out.push(`an equation without its words: ${what}`); continue; }
    if (!k || k.getAttribute('aria-hidden') !== 'true')
      out.push(`an equation's symbols are read: ${what}`);
    const wide = d.scrollWidth > d.clientWidth + 1;
    if (d.hasAttribute('tabindex') !== wide)
      out.push(`an equation is ${wide ? 'no' : 'a'} tab stop, ${wide ? '' : 'not '}scrolling` +
               ` sideways: ${what}`);
    const words = said.textContent.replace(/^Equation: /, '');
    if (wide && !(name.endsWith(words) && said.getAttribute('aria-hidden') === 'true'))
      out.push(`a scrolling equation's tab stop is not named by its words alone: ${what}`);
    if (!wide && said.getAttribute('aria-hidden') === 'true')
      out.push(`an equation's words are hidden: ${what}`);
  }
  return out;
}"""
