"""Ignition configs: parse spec 2.2 and 3.0-3.5 into one internal form, merge, decode ``data:``
URLs, and Ignition's own validation rules (paths, values, where a config may write)."""
