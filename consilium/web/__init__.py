"""``consilium serve``: a local web studio over run folders (docs/studio-web.md).

Browse a cohort (index, summary, arm and case pages, live progress), run a blinded physician rating study
(:mod:`consilium.study` stores it), and answer a run paused for a person. :func:`consilium.web.app.make_app`
builds the aiohttp application; :func:`consilium.web.server.serve` runs it. Security (sessions, CSRF, the
Content Security Policy, who may see what) is :mod:`consilium.web.security`'s, once for every page.
"""
