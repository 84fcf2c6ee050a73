package known

import (
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/bnxt"
	"github.com/rocectl/rocectl/driver/generic"
	"github.com/rocectl/rocectl/driver/ice"
	"github.com/rocectl/rocectl/driver/mlx5"
)

// For is the driver layer of a port whose kernel driver is module (as
// ethtool -i names it): the one place a driver's name is looked at.
func For(module string) driver.Driver {
	switch {
	case strings.HasPrefix(module, "mlx5"):
		return mlx5.Driver{}
	case module == "bnxt_en":
		return bnxt.Driver{}
	case module == "ice":
		return ice.Driver{Module: module}
	case module == "i40e":
		return ice.Driver{Module: module, DisableFlag: true}
	}
	return generic.Driver{Module: module}
}
