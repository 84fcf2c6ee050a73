package known

import "testing"

func TestForPicksTheDriverPackage(t *testing.T) {
	for module, want := range map[string]string{
		"mlx5_core": "mlx5",
		"bnxt_en":   "bnxt",
		"ice":       "ice",
		"i40e":      "ice",
		"rxe":       "generic",
		"":          "generic",
		"mlx4_en":   "generic",
	} {
		if got := For(module).Name(); got != want {
			t.Errorf("For(%q) = %s, want %s", module, got, want)
		}
	}
}
