from hackscan.dynamic.probe import Outcome, ProfiledProbe, profile_of


class StreamJoin(ProfiledProbe):
    """From the same profile as kernel attribution: kernels that forward launched on a stream
    other than the caller's (found with a marker kernel launched on the caller's stream just
    before forward) must be joined before forward returns: a stream wait or a synchronisation
    recorded after the last such launch. Unjoined side-stream work is invisible to a benchmark
    timer on the caller's stream, however short the kernel."""

    name = "stream-join"
    answers = ("timing-integrity",)
    confirms = ("side-stream",)
    summary = "work on other streams is joined before forward returns"
    def evaluate(self, obs):
        prof, why = profile_of(obs)
        if prof is None or not prof.get("caller_streams") or not prof.get("forward_us"):
            return Outcome(self.name, "inconclusive", f"no stream information in the profile ({why or 'no marker'})")
        caller = set(prof["caller_streams"])
        mine = [k for k in prof.get("kernels", []) if k.get("in_forward")]
        # a CUDA graph's kernels run on the graph's internal streams; the stream the graph was
        # launched into waits for all of them (the graph's own join)
        graph = [k for k in mine if k.get("graph")]
        side = [k for k in mine if k.get("stream") not in caller and not k.get("graph")]
        if not side:
            via = f" ({len(graph)} of them replayed from a CUDA graph, which joins its own streams)" if graph else ""
            return Outcome(self.name, "passed", f"all {len(mine)} kernels launched by forward ran on the caller's "
                           f"stream{via}")
        last = max(k["launch_us"] for k in side if k.get("launch_us") is not None)
        joins = [w["name"] for w in prof.get("waits", []) if w["us"] >= last]
        streams = sorted({k["stream"] for k in side})
        names = sorted({k["name"].split("(")[0][:60] for k in side})
        if joins:
            return Outcome(self.name, "passed", f"{len(side)} kernel(s) on stream(s) {streams} beside the caller's "
                           f"{sorted(caller)}, joined before return ({joins[0]})")
        if prof.get("graph_calls"):
            # forward captured or replayed a CUDA graph: the profiler reports a graph's kernels on
            # streams of the graph's own, not always tied to the launch, and the graph's launch
            # stream waits for them; the stream record cannot tell a graph's work from side work
            # (output-fingerprint still sees work unfinished at return)
            return Outcome(self.name, "inconclusive", f"{len(side)} kernel(s) ({', '.join(names[:3])}) on stream(s) "
                           f"{streams} beside the caller's {sorted(caller)}, in a forward that "
                           f"{'/'.join(prof['graph_calls'][:3])}: a graph's own streams cannot be told apart")
        return Outcome(self.name, "caught", f"{len(side)} kernel(s) ({', '.join(names[:3])}) ran on stream(s) {streams} "
                       f"while the caller's stream is {sorted(caller)[0]}, and forward returned without a stream wait "
                       "or synchronisation after launching them", "side-stream")
