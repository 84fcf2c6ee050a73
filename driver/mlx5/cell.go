package mlx5

// mlx5 programs receive buffer sizes in cells (port_set_buffer writes
// size / cell, mlx5e_port_query_buffer reads cells × cell). The cell is
// the device's: mainline and DOCA-OFED (since 5.1) take it from the SBCAM
// register's cap_cell_size, and only fall back to 128 bytes when the
// firmware gives none (MLX5E_BUFFER_CELL_SHIFT). No kernel interface
// reports it, so rocectl infers it from the sizes the NIC itself reports:
// a ConnectX-7 reports 19872 / 220896 / 4151520, none a multiple of 128,
// and their gcd is 288.

// maxInferredCell bounds an inferred cell: a gcd above it says the sizes
// happen to share a large factor (round numbers an operator chose), not
// what the cell is.
const maxInferredCell = 1024

// InferCell is the cell size that the sizes the NIC reports (its buffers'
// and the port's total, total 0 when not reported) allow, and how it was
// found. 0 when they allow none: the caller then plans without it.
func InferCell(sizes [8]uint32, total uint32) (cell int, how string) {
	var vals []uint32
	for _, s := range append(sizes[:], total) {
		if s > 0 {
			vals = append(vals, s)
		}
	}
	if len(vals) == 0 {
		return 0, "no size the NIC reports says what its cell is"
	}
	g := vals[0]
	distinct := 1
	for _, v := range vals[1:] {
		if v != vals[0] {
			distinct++
		}
		g = gcd(g, v)
	}
	switch {
	case distinct >= 2 && g <= maxInferredCell && g%Cell != 0:
		return int(g), "inferred: the greatest common divisor of the sizes the NIC reports (the cell divides it; the driver's cap_cell_size is not readable)"
	case g%Cell == 0:
		return Cell, "every size the NIC reports is a whole number of 128-byte cells, the driver's fallback (MLX5E_BUFFER_CELL_SHIFT)"
	}
	return 0, "the sizes the NIC reports share no cell size rocectl can tell (the driver's cap_cell_size is not readable)"
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Truncated is size as the driver programs it in cells of cell bytes
// (port_set_buffer: size / cell, whole cells); size itself when the cell
// is not known.
func Truncated(size uint32, cell int) uint32 {
	if cell <= 0 {
		return size
	}
	return size / uint32(cell) * uint32(cell)
}

// RoundedUp is size rounded up to whole cells of cell bytes: the least a
// buffer must be asked for to hold size once truncated.
func RoundedUp(size uint32, cell int) uint32 {
	if cell <= 0 {
		return size
	}
	c := uint32(cell)
	return (size + c - 1) / c * c
}
