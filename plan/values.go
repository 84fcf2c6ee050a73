package plan

import (
	"fmt"

	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/policy"
)

// setMLX5 puts change c's value into p, decoded by its kind's codec: the
// state an mlx5 port's buffer checks see once c is written. Kinds the
// checks do not depend on leave p as it is.
func setMLX5(p *mlx5.Port, c policy.Change) error {
	switch c.Kind {
	case policy.KindGlobalPause:
		pa, err := policy.PauseCodec.Parse(c.Value)
		if err != nil {
			return err
		}
		p.Pause, p.PauseKnown = pa.On(), true
	case policy.KindPFC:
		b, err := policy.PrioCodec.Parse(c.Value)
		if err != nil {
			return err
		}
		p.PFC = b
	case policy.KindCableLength:
		n, err := policy.IntCodec.Parse(c.Value)
		if err != nil {
			return err
		}
		p.Cable = n
	case policy.KindMTU:
		n, err := policy.IntCodec.Parse(c.Value)
		if err != nil {
			return err
		}
		p.MTU = n
	case policy.KindPrioBuffer:
		ints, err := policy.Ints8Codec.Parse(c.Value)
		if err != nil {
			return err
		}
		for j, x := range ints {
			p.Prio2Buf[j] = uint8(x)
		}
	case policy.KindBufferSize:
		sizes, err := policy.Sizes8Codec.Parse(c.Value)
		if err != nil {
			return err
		}
		for j, x := range sizes {
			p.Sizes[j] = uint32(x)
		}
	}
	return nil
}

// undecodable refuses c, whose value its kind's codec does not read: no
// check can be made of a value that is not one (a profile's values are
// validated when it loads; this is a journal or a planner bug).
func (pl *planning) undecodable(c policy.Change, err error) {
	pl.refuse(c, fmt.Sprintf("%s's value %q is not a %s value (%v): nothing can be checked or written for it", c.Key, c.Value, c.Kind, err))
}
