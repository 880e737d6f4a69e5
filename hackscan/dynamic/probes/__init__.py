"""One module per probe; `hackscan.dynamic.probe.load_probes` finds them."""
