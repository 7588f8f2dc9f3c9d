"""tools/review.py: which end of the colour range is near, from the EXR header depthbatch wrote."""
from tools.review import larger_is_nearer_of


def test_the_key_depthbatch_writes_decides():
    # depthbatch/larger_is_nearer (DepthNormalizer::larger_is_nearer) wins over anything derived.
    assert larger_is_nearer_of({"depthbatch/larger_is_nearer": "1", "depthbatch/depth_convention": "metric"})
    assert not larger_is_nearer_of({"depthbatch/larger_is_nearer": "0", "depthbatch/depth_convention": "inverse"})
    assert larger_is_nearer_of({"depthbatch/larger_is_nearer": b"1".decode()})


def test_older_exrs_without_the_key_are_derived_from_the_convention():
    assert larger_is_nearer_of({"depthbatch/depth_convention": "inverse"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "metric"})
    assert larger_is_nearer_of({"depthbatch/depth_convention": "normalized", "depthbatch/near_is": "1 (near = 1, far = 0)"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "normalized", "depthbatch/near_is": "0 (near = 0, far = 1)"})
    assert larger_is_nearer_of({"depthbatch/depth_convention": "raw",
                                "depthbatch/model_output_kind": "relative_inverse_depth"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "raw", "depthbatch/model_output_kind": "metric_depth"})
    assert not larger_is_nearer_of({})


def test_a_normalized_job_colours_zero_to_one_else_the_shots_percentiles():
    from tools.review import colour_range
    # A 0-1 normalized job whose frames hold 0.02-0.87: the bar still reaches 1.
    assert colour_range([0.02, 0.03, 0.01], [0.86, 0.87, 0.85], "normalized") == (0.0, 1.0)
    assert colour_range([1.0, 2.0, 1.5], [5.0, 6.0, 7.0], "metric") == (1.5, 6.0)
    assert colour_range([], [], "metric") == (0.0, 1.0)


def test_the_frame_axis_ticks_whole_frames():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tools.review import integer_frame_axis
    fig, ax = plt.subplots()
    ax.plot([1001, 1002, 1003], [1.0, 2.0, 1.5])   # matplotlib's own ticks here: 1001.0, 1001.5, ... 1003.0
    integer_frame_axis(ax)
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if 1001 <= t <= 1003]
    plt.close(fig)
    assert ticks == [1001, 1002, 1003]
